"""The file names of a segment's graph facts (indexer/index/graph/facts.py), apart from the
code that reads them: listing a segment's files (segment_format.py) costs no graph import."""

FACTS_META = "graph_facts.json"
FACTS_LINES = "graph_facts_z.bin"
FACTS_OFFSETS = "graph_facts_offsets.npy"
FACTS_KEYS = "graph_facts_keys.npy"
FACTS_VALUES = "graph_facts_values.npy"
FACTS_FILE_NAMES = (FACTS_META, FACTS_LINES, FACTS_OFFSETS, FACTS_KEYS, FACTS_VALUES)
