"""Does `--compress` keep the line that answers? A hand-labelled check, before and after.

    python benchmarks/bench_compress.py [--work DIR]   (also run by bench_agent.py)

benchmarks/data/compress_lines.jsonl holds questions over flask 3.0.3 and requests 2.32.3
(PyPI sdists, fetched once into --work) and this repository at HEAD, each with the file and
the exact line a developer needs. For each question the top 10 results of `indexer search`
are compressed two ways, in the same run on the same indexes:

    before  the unweighted scoring: query words counted alike (filler words and the chunk's
            own name included), one body line kept (compress with a plain term set)
    after   indexer/search/line_scoring.py: stop words ignored, idf-weighted terms, own name left
            out, up to 4 lines within a character budget

Reported: the answer-line hit rate (questions whose compressed answer contains the line),
the file hit rate (its file is among the results at all: the ceiling), and tokens per answer
next to both whole-file baselines (each file once per session, i.e. per repository here; and
each file again for every question).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from indexer import Index, build_index  # noqa: E402
from indexer.search.budget import count_tokens  # noqa: E402
from indexer.search.compress import class_members, compress, query_terms  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "compress_lines.jsonl"


def load_cases(path: Path = DATA) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def open_index(spec: str, work: Path) -> Index:
    """The index of `spec` (`name==version` sdist, or `self` for this repository's HEAD)."""
    index_dir = work / "indexes" / spec.replace("==", "-")
    if (index_dir / "CURRENT").exists():
        return Index.open(index_dir=index_dir)
    if spec == "self":
        source: Path = ROOT
    else:
        from bench_core import make_repo, sdist_tree

        tree = sdist_tree(spec, work, None)
        source = make_repo([tree], work, spec.replace("==", "-"))
    build_index(source, index_dir=index_dir, progress=False)
    return Index.open(index_dir=index_dir)


def has_line(answer: str, line: str) -> bool:
    """The labelled line is in the answer (whole, or clipped with `...` after 40+ chars)."""
    want = line.strip()
    for shown in answer.splitlines():
        got = shown.strip()
        if got == want:
            return True
        if got.endswith("...") and len(got) > 40 and want.startswith(got[:-3].rstrip()):
            return True
    return False


def run_case(index: Index, case: dict[str, str], file_tokens: dict[str, int]) -> dict[str, Any]:
    from indexer.search.compress import compress_results

    results = index.search(case["query"], k=10)
    chunks = [index.show(r.id) for r in results]
    terms = query_terms(case["query"])
    before = "\n".join(
        compress(c, terms, class_members(index, c) if c.kind == "class" else []) for c in chunks
    )
    compress_results(index, case["query"], results)
    after = "\n".join(r.text or "" for r in results)
    files = list(dict.fromkeys(r.path for r in results))
    for path in files:
        if path not in file_tokens:
            file_tokens[path] = count_tokens("\n".join(index.lines(path, 1, 10**9)))
    return {
        "query": case["query"],
        "file_hit": case["file"] in files,
        "chunk_hit": any(c.path == case["file"] and has_line(c.text, case["line"]) for c in chunks),
        "hit_before": has_line(before, case["line"]),
        "hit_after": has_line(after, case["line"]),
        "tokens_chunks": count_tokens("\n".join(f"## {c.path}\n{c.text}" for c in chunks)),
        "tokens_before": count_tokens(before),
        "tokens_after": count_tokens(after),
        "files_tokens": sum(file_tokens[p] for p in files),
        "files": files,
    }


def run(work: Path, log: Any = print) -> dict[str, Any]:
    cases = load_cases()
    rows: list[dict[str, Any]] = []
    session_tokens = 0
    for spec in dict.fromkeys(c["repo"] for c in cases):
        index = open_index(spec, work)
        log(f"{spec}: {sum(c['repo'] == spec for c in cases)} labelled questions")
        file_tokens: dict[str, int] = {}
        seen: set[str] = set()
        for case in (c for c in cases if c["repo"] == spec):
            row = run_case(index, case, file_tokens)
            rows.append({"repo": spec, **row})
            seen.update(row["files"])
        session_tokens += sum(file_tokens[p] for p in seen)  # one session per repository
    n = len(rows)

    def mean(key: str) -> float:
        return statistics.fmean(float(r[key]) for r in rows)

    return {
        "questions": n,
        "file_hit_rate": round(mean("file_hit"), 3),
        "chunk_hit_rate": round(mean("chunk_hit"), 3),
        "line_hit_before": round(mean("hit_before"), 3),
        "line_hit_after": round(mean("hit_after"), 3),
        "chunks_tokens": round(mean("tokens_chunks")),
        "tokens_before": round(mean("tokens_before")),
        "tokens_after": round(mean("tokens_after")),
        "files_per_session_tokens": round(session_tokens / n),
        "files_per_query_tokens": round(mean("files_tokens")),
        "rows": rows,
    }


def table(s: dict[str, Any]) -> list[str]:
    honest = s["files_per_session_tokens"]
    return [
        f"**Answer lines kept by `--compress`** ({s['questions']} hand-labelled questions, "
        "top 10 results each; benchmarks/data/compress_lines.jsonl)",
        "",
        "| answer | answer-line hit rate | tokens / answer | vs files once per session |",
        "|---|---|---|---|",
        f"| whole files, once per session (honest baseline) | {s['file_hit_rate']:.3f} "
        f"| {honest} | - |",
        f"| result chunks, full text (ceiling for compression) | {s['chunk_hit_rate']:.3f} "
        f"| {s['chunks_tokens']} | {_pct(s['chunks_tokens'], honest)} |",
        f"| whole files, every question (upper bound) | {s['file_hit_rate']:.3f} "
        f"| {s['files_per_query_tokens']} | {_pct(s['files_per_query_tokens'], honest)} |",
        f"| `--compress` before (unweighted, 1 line) | {s['line_hit_before']:.3f} "
        f"| {s['tokens_before']} | {_pct(s['tokens_before'], honest)} |",
        f"| `--compress` after (weighted, up to 4 lines) | {s['line_hit_after']:.3f} "
        f"| {s['tokens_after']} | {_pct(s['tokens_after'], honest)} |",
        "",
        f"The answer's file is among the results for {s['file_hit_rate']:.1%} of the questions, "
        f"the chunk holding the answer line for {s['chunk_hit_rate']:.1%} (the ceiling for any "
        "compression of these results).",
    ]


def _pct(value: float, base: float) -> str:
    return f"{100 * (value - base) / base:+.1f}%" if base else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / ".bench" / "compress")
    parser.add_argument("--out", type=Path, default=None, help="raw numbers as JSON")
    args = parser.parse_args()
    summary = run(args.work.resolve(), log=lambda m: print(m, file=sys.stderr, flush=True))
    print("\n".join(table(summary)))
    for row in summary["rows"]:
        if not row["hit_after"]:
            print(f"missed: {row['repo']}: {row['query']}", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
