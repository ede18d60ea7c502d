"""CLI commands for agents: search --compress/--budget with the savings log, related, mcp,
savings and agents (setup snippets). Kept apart from cli.py, which only registers them."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from .errors import IndexerError
from .terminal import clean


class _Tee(io.TextIOBase):
    """Passes writes through to the real stdout and keeps a copy: the log records exactly
    what was sent."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(self.stream.isatty())


def add_search_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--compress",
        action="store_true",
        help="each result as signature, docstring and the lines that matter",
    )
    p.add_argument(
        "--budget", type=int, default=None, metavar="N", help="pack the results into N tokens"
    )
    p.add_argument("--no-log", action="store_true", help="do not append to the savings log")


def logged_search(args: argparse.Namespace) -> int:
    """`indexer search`: plain output by cli.cmd_search, or compressed/budgeted output; the
    text sent is appended to the savings log."""
    from . import cli
    from .api import Index

    if args.budget is None and not args.compress:
        tee = _Tee(sys.stdout)
        real, sys.stdout = sys.stdout, tee
        try:
            code = cli.cmd_search(args)
        finally:
            sys.stdout = real
        results = getattr(args, "results", None)
        if results is not None and not args.no_log:
            from .savings import record

            record(args.opened_index, results, "".join(tee.parts), "cli")
        return code
    index = Index.open(args.repo, index_dir=args.index_dir)
    if args.budget is not None:
        packed = index.search_budget(args.query, args.budget, k=args.k, log=False)
        items, text = packed.items, packed.text
        out = json.dumps(packed.to_dict(), indent=2, ensure_ascii=False) if args.json else text
    else:
        results = index.search(args.query, k=args.k, compress=True, log=False)
        items = [r.to_dict() for r in results]
        text = "\n".join(r.text or "" for r in results)
        out = json.dumps(items, indent=2, ensure_ascii=False) if args.json else text
    if not args.json and not items:
        out = "no credible results"
    sys.stdout.write((out if args.json else clean(out, multiline=True)) + "\n")
    if not args.no_log:
        from .savings import record

        record(index, items, out + "\n", "cli")
    return 0


def cmd_related(args: argparse.Namespace) -> int:
    from .api import Index
    from .notebook import location

    direction = "callers" if args.callers else "callees" if args.callees else "both"
    index = Index.open(args.repo, index_dir=args.index_dir)
    found = index.related(args.target, direction=direction, depth=args.depth, limit=args.limit)
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
    from .api import _git_dir
    from .savings import report, set_enabled
    from .store import default_index_dir

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
    usd = result["usd"]
    p = result["prices_usd_per_million"]
    print(f"queries         {result['queries']}  {result['by_source']}")
    print(f"tokens sent     {result['tokens_sent']:,}  (o200k_base)")
    print(f"baseline        {result['tokens_baseline']:,}  ({result['baseline']})")
    print(f"tokens saved    {result['tokens_saved']:,}  ({result['saved_percent']}%)")
    print(
        f"money saved     ${usd['saved_as_input']:.4f} as input (${p['input']}/M), "
        f"${usd['saved_as_cached_input']:.4f} as cached input (${p['cached_input']}/M); "
        f"output (${p['output']}/M) unchanged"
    )
    state = "on" if result["enabled"] else "off"
    print(f"log             {clean(result['log'])} ({state})")
    if result["unavailable_files"]:
        missing = result["unavailable_files"]
        print(f"note            {missing} file(s) no longer in git: not counted")
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from .agents import setup_snippets

    repo = str(Path(args.repo or os.getcwd()).resolve())
    snippets = setup_snippets(repo)
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
