"""CLI commands for agents: search --compress/--budget with the savings log, related, mcp,
savings and agents (setup snippets). Kept apart from cli.py, which only registers them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import IndexerError
from ..terminal import clean


def cmd_related(args: argparse.Namespace) -> int:
    from ..api import Index
    from ..source.notebook import location

    direction = "callers" if args.callers else "callees" if args.callees else "both"
    # The code graph is the indexed commit's (Index.related): no working tree to look at.
    index = Index.open(args.repo, index_dir=args.index_dir, worktree=False)
    related = index.related(args.target, direction=direction, depth=args.depth, limit=args.limit)
    found = [entry.to_dict() for entry in related]
    if args.json:
        sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n")
        return 0
    for entry in found:
        s = entry["symbol"]
        where = f"{s.get('path')}:{s.get('start_line')}-{s.get('end_line')}"
        if "cell" in s:  # a notebook symbol: lines within the cell
            where = location(s["path"], s["cell"], s["start_line"], s["end_line"])
        print(clean(f"{where}  {s.get('qualname', s.get('name'))}  {s['id']}"))
        for way in ("callers", "callees"):
            if way not in entry:
                continue
            print(f"  {way}:" + ("" if entry[way] else " none"))
            for r in entry[way]:
                pad = "  " * r["depth"]
                if "qualname" in r:
                    where = location(r["path"], r.get("cell"), r["start_line"])
                    print(clean(f"  {pad}{r['qualname']}  {where}  {r['id']}  ({r['how']})"))
                else:
                    print(clean(f"  {pad}{r['name']}  ({r['kind']}, {r['how']})"))
            if entry.get(f"{way}_omitted"):
                print(f"  {'  '}... {entry[f'{way}_omitted']} more")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from .mcp_server import serve

    serve(args.repo, args.index_dir)
    return 0


def cmd_savings(args: argparse.Namespace) -> int:
    from ..index.gitdir import git_dir as _git_dir
    from ..index.store import default_index_dir
    from ..search.savings import set_enabled
    from ..search.savings_report import report

    index_dir = Path(args.index_dir) if args.index_dir else default_index_dir(_git_dir(args.repo))
    if args.off or args.on:
        if not index_dir.is_dir():
            raise IndexerError(f"no index at {index_dir}; run `indexer build` first")
        set_enabled(index_dir, bool(args.on))
    prices = {
        "input": args.price_input,
        "cached_input": args.price_cached_input,
        "output": args.price_output,
    }
    result = report(index_dir, prices).to_dict()
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return 0
    print(savings_table(result))
    return 0


def savings_table(r: dict[str, Any]) -> str:
    """`indexer savings` for people: both baselines side by side, each labelled."""
    from .output import table

    p, usd = r["prices_usd_per_million"], r["usd"]
    sources = ", ".join(f"{k} {v}" for k, v in sorted(r["by_source"].items())) or "none"
    rows = [
        ("sent (what the searches returned)", f"{r['tokens_sent']:,}", "", "", ""),
        (
            "baseline: files once per session (honest)",
            f"{r['tokens_baseline_session']:,}",
            f"{r['tokens_saved_session']:,}",
            f"{r['saved_percent_session']}%",
            f"${usd['saved_session_as_input']:.4f}",
        ),
        (
            "baseline: files every query (upper bound)",
            f"{r['tokens_baseline']:,}",
            f"{r['tokens_saved']:,}",
            f"{r['saved_percent']}%",
            f"${usd['saved_as_input']:.4f}",
        ),
    ]
    lines = [
        f"{r['queries']} searches ({sources}) in {r['sessions']} session(s); "
        "tokens counted with o200k_base",
        "",
        table(rows, ("", "tokens", "saved", "saved %", f"saved at ${p['input']}/M input")),
        "",
        f"Cached input (${p['cached_input']}/M) would save "
        f"${usd['saved_as_cached_input']:.4f} on the upper bound; output tokens "
        f"(${p['output']}/M) do not change.",
        f"log: {clean(r['log'])} ({'on' if r['enabled'] else 'off'})",
    ]
    if r["unavailable_files"]:
        lines.append(f"note: {r['unavailable_files']} file(s) no longer in git: not counted")
    return "\n".join(lines)


def cmd_agents(args: argparse.Namespace) -> int:
    from .agents import setup_snippets

    snippets = setup_snippets()
    if args.json:
        sys.stdout.write(json.dumps(snippets, indent=2) + "\n")
        return 0
    for item in snippets.values():
        print(f"# {clean(item['title'])}")
        if item.get("file"):
            print(f"# -> {clean(item['file'])}")
        print(clean(item["text"].rstrip(), multiline=True))
        print()
    return 0


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("related", parents=[common], help="callers and callees from the code graph")
    p.add_argument("target", help="symbol name, qualname, path::qualname or chunk id")
    way = p.add_mutually_exclusive_group()
    way.add_argument("--callers", action="store_true", help="only who calls it")
    way.add_argument("--callees", action="store_true", help="only what it calls")
    way.add_argument("--both", action="store_true", help="callers and callees (default)")
    p.add_argument("--depth", type=int, default=1, help="hops to follow (1-5, default 1)")
    p.add_argument("--limit", type=int, default=50, help="at most this many per direction")
    p.set_defaults(func=cmd_related)

    p = sub.add_parser(
        "mcp", parents=[common], help="serve the index to agents over MCP (stdio, read-only)"
    )
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("savings", parents=[common], help="tokens and money saved by searches")
    p.add_argument("--price-input", type=float, default=None, help="USD per 1M input tokens")
    p.add_argument(
        "--price-cached-input", type=float, default=None, help="USD per 1M cached input tokens"
    )
    p.add_argument("--price-output", type=float, default=None, help="USD per 1M output tokens")
    onoff = p.add_mutually_exclusive_group()
    onoff.add_argument("--off", action="store_true", help="stop logging searches")
    onoff.add_argument("--on", action="store_true", help="log searches again")
    p.set_defaults(func=cmd_savings)

    p = sub.add_parser(
        "agents", parents=[common], help="print setup for Claude Code, Codex, Cursor, ..."
    )
    p.set_defaults(func=cmd_agents)
