"""The latency bench's report (benchmarks/bench_latency.py): its results as markdown tables."""

from __future__ import annotations

from typing import Any


def report(results: dict[str, Any]) -> str:
    def pair(m: dict[str, float] | None) -> str:
        return f"{m['p50_ms']} / {m['p95_ms']}" if m else "-"

    def ratio(a: dict[str, float], b: dict[str, float] | None, key: str) -> str:
        return f"{a[key] / b[key]:.2f}" if b else "-"

    lines = [
        "| corpus | chunks | kind | indexer p50 / p95 ms | semble p50 / p95 ms | baseline p50 "
        "/ p95 ms | p50 / p95 vs semble | p50 vs baseline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    flatness = results.pop("flat", None)
    for name, entry in results.items():
        warm = entry["warm"]
        for kind, m in warm["indexer"].items():
            s = warm.get("semble", {}).get(kind)
            b = warm.get("baseline", {}).get(kind)
            lines.append(
                f"| {name} | {entry['chunks']} | {kind} | {pair(m)} | {pair(s)} | {pair(b)} | "
                f"{ratio(m, s, 'p50_ms')} / {ratio(m, s, 'p95_ms')} | {ratio(m, b, 'p50_ms')} |"
            )
    waits = [
        f"{name}: " + ", ".join(f"{s} {ms}" for s, ms in entry["warm"]["idle_wait_ms"].items())
        for name, entry in results.items()
        if "idle_wait_ms" in entry["warm"]
    ]
    built = [
        f"{name} {system} {stamp['commit']} ({stamp['digest']})"
        for name, entry in results.items()
        for system, stamp in entry.get("built_by", {}).items()
    ]
    if built:  # an index another checkout built would not measure this code's layout
        lines += ["", "indexes built by (commit, source digest): " + "; ".join(built)]
        libraries = {
            str(stamp.get("libraries"))
            for entry in results.values()
            for stamp in entry.get("built_by", {}).values()
        }
        lines += ["", "built with: " + "; ".join(sorted(libraries))]
    if waits:
        lines += ["", "waited for idle workers after a search, ms a sample: " + "; ".join(waits)]
    lines += [
        "",
        "| corpus | import numpy, faiss ms | cold search ms (× floor) | with `indexer serve` ms "
        "(× floor) | baseline cold ms (× floor) | search RSS MB (baseline) | RSS MB after N "
        "varied queries (baseline) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in results.items():
        c = entry["cold"]
        base = f"{c['baseline_ms']} ({c['baseline_ratio']})" if "baseline_ms" in c else "-"
        lines.append(
            f"| {name} | {c['floor_ms']} | {c['search_ms']} ({c['search_ratio']}) | "
            f"{c['served_ms']} ({c['served_ratio']}) | {base} | {entry['search_rss_mb']} "
            f"({entry.get('baseline_rss_mb', '-')}) | {entry.get('varied_rss_mb', '-')} "
            f"({entry.get('baseline_varied_rss_mb', '-')}), N = {entry.get('varied_queries', 0)} |"
        )
    if flatness is not None:
        first, last = flatness["corpora"][0], flatness["corpora"][-1]
        rounds = flatness.get("rounds", 1)
        lines += [
            "",
            f"| flat: {first}'s queries, one process ({rounds} rounds, medians) | kind | "
            f"p50 ms {first} / {last} | {last} / {first} (rounds' range) | baseline p50 ms | "
            "baseline ratio (range) |",
            "|---|---|---|---|---|---|",
        ]
        for kind, m in flatness["indexer"].items():
            b = flatness.get("baseline", {}).get(kind)
            bp = " / ".join(map(str, b["p50_ms"])) if b else "-"
            lines.append(
                f"| | {kind} | {' / '.join(map(str, m['p50_ms']))} | {_spread(m)} | {bp} | "
                f"{_spread(b) if b else '-'} |"
            )
    return "\n".join(lines)


def _spread(flat: dict[str, Any]) -> str:
    """A flat ratio with its rounds' range, e.g. `1.46 (1.42-1.51)`."""
    ratios = flat.get("ratios") or [flat["ratio"]]
    return f"{flat['ratio']} ({min(ratios):.2f}-{max(ratios):.2f})"
