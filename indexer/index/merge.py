"""Merging segments: a tiered policy keeps their number small; merging copies live rows.

Every update adds one small segment. Segments are grouped in tiers by live rows (a tier spans a
factor of MERGE_FACTOR); when a tier holds MERGE_FACTOR segments they are merged into one, and a
segment whose rows are mostly deleted is rewritten with the next merge. A merge copies the live
rows (texts, postings, vectors, graph facts; nothing is chunked again) into one new segment and
publishes a new generation in which it replaces them: results do not change (the reader's row
space is in path order whatever the segments). `indexer optimize` merges everything into one
segment. Segments of at least MERGE_MAX_ROWS / 2 live rows (or half the build's segment size,
stream.py, when that is smaller) are left out of automatic merges, as Lucene's tiered policy
leaves segments near its maximum: a merge copies rows through `assemble`, which holds more per
row than a streamed build (163k rows merged peaked at 1.49 GB), so the hooks' background merges
stay small, and the segments of a full build are not merged again by the first update.

A merge needs no lock while it copies rows: `prepare` writes the merged segment as a temporary
directory from the generation current when it started, and `commit` (under the publish lock,
held for milliseconds) publishes it on the generation current then. An update that landed
meanwhile only added segments and deleted paths: the merged segment replaces the segments it
merged, and takes the paths those lost since as its own deletes (every path of one the update
dropped), so every path is served by what the update left. A generation that holds none of
the merged segments (a full build, a pull), or one in which a merged segment serves a path it
no longer served (a switch back to an older generation), drops the merge; the next one plans
again. So a commit whose update arrives during a background merge is searchable after its own
update (indexer/fresh/freshness.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .graph.facts import FactsMapping
from .reader import open_generation
from .segment import Segment
from .store import (
    SEGMENTS,
    SegmentWriter,
    current_generation,
    new_name,
    publish_generation,
    publish_lock,
    read_generation,
)
from .stream import chunks_per_segment
from .vectors import StaticVectors
from .writer import CopiedFile, assemble, stored_ranges

MERGE_FACTOR = 8
# Automatic merges leave alone segments of half this many live rows or more (see above).
MERGE_MAX_ROWS = 1 << 16


def _tier(rows: int) -> int:
    return int(math.log(max(rows, 1), MERGE_FACTOR))


def plan(sizes: list[tuple[int, int]], max_rows: int | None = None) -> list[int]:
    """Indices of the segments to merge now, from (live rows, dead rows) of each; [] if none.
    Segments of `max_rows // 2` live rows or more (default: MERGE_MAX_ROWS, or the build's
    segment size when smaller) are merged only when they are mostly deleted rows."""
    if len(sizes) < 2:
        return []
    if max_rows is None:
        max_rows = min(chunks_per_segment(), MERGE_MAX_ROWS)
    full = max_rows // 2
    tiers: dict[int, list[int]] = {}
    for i, (live, _) in enumerate(sizes):
        if live < full:
            tiers.setdefault(_tier(live), []).append(i)
    # The smallest tiers first: once they hold MERGE_FACTOR segments together, merge them.
    chosen: set[int] = set()
    for tier in sorted(tiers):
        chosen.update(tiers[tier])
        if len(chosen) >= MERGE_FACTOR:
            break
    else:
        chosen = set()
    if chosen:  # a segment that is mostly deleted rows is rewritten with the merge
        chosen.update(i for i, (live, dead) in enumerate(sizes) if dead > live)
    return sorted(chosen) if len(chosen) >= 2 else []


@dataclass
class PreparedMerge:
    """A merged segment written but not yet published."""

    index_dir: Path
    generation: Path  # the generation it was planned on
    dead: dict[str, set[str]]  # each merged segment's deleted paths in that generation
    served: dict[str, set[str]]  # and the paths it served there
    writer: SegmentWriter  # the merged segment, still a temporary directory
    paths: frozenset[str]  # the files it holds
    result: dict[str, Any]


def prepare(index_dir: Path, everything: bool = False) -> PreparedMerge | dict[str, Any]:
    """Plan on the current generation and write the merged segment (as a temporary directory);
    the result dict when there is nothing to merge."""
    started = time.perf_counter()
    path = current_generation(index_dir)
    manifest, parts = open_generation(path)
    sizes = []
    for segment, deleted in parts:
        gone = set(deleted)
        bounds = segment.file_rows
        dead = sum(int(bounds[i + 1] - bounds[i]) for i, p in enumerate(segment.paths) if p in gone)
        sizes.append((segment.n_rows - dead, dead))
    if everything:
        chosen = list(range(len(parts))) if len(parts) > 1 or any(d for _, d in sizes) else []
    else:
        chosen = plan(sizes)
    result = {"segments_before": len(parts), "merged": len(chosen), "seconds": 0.0}
    if not chosen:
        return {**result, "segments_after": len(parts)}
    # Rows are copied: they must be what was written (every file hashed, not only small ones).
    sources = [Segment.open(parts[i][0].directory, verify=True) for i in chosen]  # type: ignore[arg-type]
    files = []
    served: dict[str, set[str]] = {}
    for source, i in zip(sources, chosen, strict=True):
        gone = set(parts[i][1])
        for local, p in enumerate(source.paths):
            if p not in gone:
                files.append(CopiedFile(p, int(source.times[local]), source, local))
                served.setdefault(source.name, set()).add(p)
    info = manifest["vectors"]
    table = StaticVectors.load(Path(info["dir"]) if info.get("dir") else None)
    # The graph facts as stored (each file's block and name keys), copied without decoding.
    facts: dict[str, dict[str, Any]] = {}
    encoded = []
    for source in sources:
        mine, stored = served.get(source.name, set()), source.graph_facts
        if isinstance(stored, FactsMapping):
            encoded.extend(stored.segment.encoded(mine))
        else:
            facts.update({p: stored[p] for p in mine if p in stored})
    codec = stored_ranges(sources[0].dense)
    data = assemble(files, table, facts, codec, encoded)  # type: ignore[arg-type]
    writer = SegmentWriter(index_dir)
    try:
        data.save(writer.path)
    except BaseException:
        writer.abort()
        raise
    lists = {parts[i][0].name: set(parts[i][1]) for i in chosen}
    result["started"] = started
    return PreparedMerge(index_dir, path, lists, served, writer, frozenset(data.paths), result)


def commit(prepared: PreparedMerge) -> dict[str, Any]:
    """Publish a prepared merge on the current generation (see the module's docstring), or
    drop it when that generation no longer holds what it merged."""
    index_dir, result = prepared.index_dir, dict(prepared.result)
    started = result.pop("started")
    try:
        with publish_lock(index_dir):
            path = current_generation(index_dir)
            manifest = read_generation(path)
            entries = _rebased(manifest["segments"], prepared)
            if entries is None:
                prepared.writer.abort()
                return {**result, "merged": 0, "segments_after": len(manifest["segments"])}
            name = new_name(str(manifest["commit"]))
            prepared.writer.finish(name)
            entries[0]["name"] = name
            keep = {k: v for k, v in manifest.items() if k not in ("files", "segments", "created")}
            keep = {k: v for k, v in keep.items() if k not in ("format_version", "tool_version")}
            publish_generation(index_dir, {**keep, "segments": entries})
    except BaseException:
        prepared.writer.abort()
        raise
    written = sum(p.stat().st_size for p in (index_dir / SEGMENTS / name).iterdir())
    return {
        **result,
        "segments_after": len(entries),
        "written_bytes": written,
        "rebased": path != prepared.generation,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _rebased(
    segments: list[dict[str, Any]], prepared: PreparedMerge
) -> list[dict[str, Any]] | None:
    """The entries of a generation with the merged segments replaced by the new one (named
    later: entries[0]), which no longer serves what they lost since the merge was planned (all
    of it for one the generation dropped: every file it served is gone). None when none of them
    is left, one serves a path again that it no longer served, or nothing would be served."""
    now = {s["name"]: set(s.get("deleted", [])) for s in segments}
    if not any(name in now for name in prepared.dead):
        return None  # another index altogether (a full build, a pull)
    lost: set[str] = set()
    for name, dead in prepared.dead.items():
        if name not in now:
            lost |= prepared.served.get(name, set())
        elif not now[name] >= dead:
            return None  # e.g. a switch back to an older generation
        else:
            lost |= now[name] - dead
    if lost >= prepared.paths:
        return None
    merged = {"name": "", "deleted": sorted(lost & prepared.paths)}
    return [merged] + [s for s in segments if s["name"] not in prepared.dead]


def merge(index_dir: Path, everything: bool = False) -> dict[str, Any]:
    """Merge what the policy (or `everything`) chooses; returns what was done."""
    prepared = prepare(index_dir, everything)
    return prepared if isinstance(prepared, dict) else commit(prepared)
