"""Before/after table of the notebooks' artifacts on the dev sets (docs/evaluation.md).

    python scripts/eval_report.py --before-vectors DIR --before-fusion FILE \
        --dataset long=devset/instances.jsonl=trees/devset \
        --dataset short=devset-short/instances.jsonl=trees/devset-short [--json OUT]

Every number comes from `indexer.eval.evaluate` on the same cached indexes (a table other than
the one an index was built with is swapped in memory, exactly as a rebuild would embed). Systems:
whole-file BM25, chunk BM25, dense-only and fused, under the artifacts before (the untuned core)
and after (the shipped artifacts/).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from indexer.eval.evaluate import load_dataset
from indexer.eval.tuning import EvalSet
from indexer.index.vectors import StaticVectors, default_table_dir
from indexer.search.fusion import FusionConfig, default_fusion_path

METRICS = ("file_recall@1", "file_recall@10", "mrr", "function_recall@10", "tokens")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", action="append", required=True, help="NAME=FILE=TREES")
    parser.add_argument("--before-vectors", type=Path, required=True)
    parser.add_argument("--before-fusion", type=Path, default=None, help="default: built-ins")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/indexer/eval")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    before_table = StaticVectors.load(args.before_vectors)
    after_table = StaticVectors.load(default_table_dir())
    before_fusion = (
        FusionConfig.load(args.before_fusion) if args.before_fusion else FusionConfig.default()
    )
    after_fusion = FusionConfig.load(default_fusion_path())
    runs: list[tuple[str, str, StaticVectors, FusionConfig, tuple[str, ...]]] = [
        ("before", "before", before_table, before_fusion, ("file-bm25", "bm25", "dense", "fused")),
        ("after", "before", after_table, before_fusion, ("dense", "fused")),
        # Dense-only is compared under one fusion setting: tuned weights may switch a retriever
        # off for a query type (long.dense = 0), which empties a one-retriever ranking.
        ("after", "after", after_table, after_fusion, ("bm25", "fused")),
    ]
    results: list[dict[str, Any]] = []
    for spec in args.dataset:
        name, file, trees = spec.split("=")
        eval_set = EvalSet(name, load_dataset(Path(file), Path(trees)), args.cache_dir)
        for vectors, fusion_name, table, fusion, systems in runs:
            report = eval_set.run(systems, fusion, table)
            for system, m in report.systems.items():
                row = {
                    "dataset": name,
                    "system": system,
                    "vectors": vectors,
                    "fusion": fusion_name,
                    **{k: m.get(k) for k in METRICS},
                }
                results.append(row)
                print(json.dumps(row), file=sys.stderr)
    lines = [
        "| dev set | system | vectors | fusion | R@1 | R@10 | MRR | fn R@10 | tokens/query |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        cells = [
            "-" if r[m] is None else f"{r[m]:.0f}" if m == "tokens" else f"{r[m]:.3f}"
            for m in METRICS
        ]
        lines.append(
            f"| {r['dataset']} | {r['system']} | {r['vectors']} | {r['fusion']} | "
            + " | ".join(cells)
            + " |"
        )
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
