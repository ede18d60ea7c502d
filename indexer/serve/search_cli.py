"""`indexer search` and `indexer show`: grep's habits on top of Index.search / Index.show.

Exit status: 0 when something credible was found, 1 when nothing was (grep's convention;
the results, if any, are still printed after a `low confidence: ...` line), 2 on error.
`-` as the query reads it from standard input. The text sent is what the savings log records.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import IndexerError
from ..terminal import clean
from .output import Style, color_enabled, emit_json

MAX_STDIN_QUERY = 100_000


def read_query(value: str) -> str:
    if value != "-":
        return value
    text = sys.stdin.read(MAX_STDIN_QUERY + 1)
    if len(text) > MAX_STDIN_QUERY:
        raise IndexerError(f"the query on standard input is over {MAX_STDIN_QUERY} characters")
    return text.strip()


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {"paths": args.path, "languages": args.lang, "kinds": args.kind}


def open_index(args: argparse.Namespace) -> Any:
    """The index a read command answers from: the working tree as it is now (uncommitted files
    overlaid), or exactly the indexed commit with `--no-worktree` or `--rev REV`."""
    rev = getattr(args, "rev", None)
    worktree = rev is None and not getattr(args, "no_worktree", False)
    if worktree:
        from ..index.gitdir import worktree_root

        root = worktree_root(args.repo)
        if root is not None:  # (a bare repository needs none of the working tree's code)
            from ..source.worktree import prefetch_status

            prefetch_status(root)  # runs while numpy, FAISS and the index load
    from ..api import Index

    one_shot = getattr(args, "one_shot", False)  # not in `indexer serve` (cli.main)
    index = Index.open(
        args.repo, index_dir=args.index_dir, worktree=worktree, watch=False, one_shot=one_shot
    )
    if rev is not None:
        from ..source.worktree import resolve_rev

        commit = resolve_rev(args.repo, rev)
        if commit != index.commit:
            raise IndexerError(
                f"the index holds commit {index.commit[:12]}, not {rev} ({commit[:12]}); "
                f"run `indexer update --rev {rev}` to index it"
            )
    return index.now()


def add_worktree_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-worktree",
        action="store_true",
        help="the indexed commit only: ignore uncommitted files (default: overlay them)",
    )
    p.add_argument(
        "--rev", default=None, metavar="REV", help="the commit REV exactly (the indexed one)"
    )


def cmd_search(args: argparse.Namespace) -> int:
    query = read_query(args.query)
    index = open_index(args)
    from ..search.answers import confidence_label

    packed = None
    if args.budget is not None:
        packed = index.search_budget(query, args.budget, k=args.k, **_filters(args))
        records: list[dict[str, Any]] = packed.items
    else:
        results = index.search(
            query, k=args.k, with_text=args.text, compress=args.compress, **_filters(args)
        )
        records = [r.to_dict() for r in results]
    verdict = index.verdict(query, records)
    if args.jsonl:
        out = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    elif args.json:
        data: Any = packed.to_dict() if packed is not None else records
        out = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        style = Style(color_enabled(sys.stdout))
        lines = [style(clean(verdict.message), "33")] if verdict.message else []
        if packed is not None:
            lines += [clean(packed.text, multiline=True)] if packed.text else []
        elif args.compress:
            lines += [clean(r.get("text") or "", multiline=True) for r in records]
        else:
            from ..source.notebook import location as notebook_location

            for rank, r in enumerate(records, 1):
                name = clean(r["qualname"] or r["symbol"])
                conf = f"confidence {r['confidence']:.2f} ({confidence_label(r['confidence'])})"
                where = clean(
                    notebook_location(r["path"], r.get("cell"), r["start_line"], r["end_line"])
                )
                kind = clean("[{kind}]".format(**r))
                lines.append(
                    f"{rank:>2}. {style(where, '36')}  {style(name, '1')} {style(kind, '2')}"
                    f"  {conf}  {style(clean(r['id']), '2')}"
                )
                if r["signature"]:
                    lines.append(f"    {clean(r['signature'])}")
                lines += [f"    {clean(line)}" for line in (r.get("text") or "").splitlines()]
        if not records:
            lines.append("no results")
        out = "\n".join(lines) + "\n"
    sys.stdout.write(out)
    sys.stdout.flush()
    if not args.no_log:
        from ..search.savings import record

        record(index, records, out, "cli")
    return 0 if verdict.credible else 1


def cmd_show(args: argparse.Namespace) -> int:
    """A chunk by id, or exactly the lines PATH:START-END (PATH:LINE: that line)."""
    from ..search.compress import parse_location

    index = open_index(args)
    # Exact lines of a file; a notebook cell's location names its chunk (source/notebook.py).
    location = parse_location(args.id) if ":" in args.id and "#cell=" not in args.id else None
    if location is not None:
        path, start, end = location
        lines = index.lines(path, start, start if end is None else end)
        if args.json:
            last = start + len(lines) - 1
            emit_json({"path": path, "start_line": start, "end_line": last, "lines": lines})
        else:  # exactly those lines; control characters shown escaped (indexer/terminal.py)
            sys.stdout.write("".join(clean(line) + "\n" for line in lines))
        return 0
    chunk = index.show(args.id)
    if args.json:
        emit_json(chunk.to_dict())
    else:
        from ..source.notebook import location as notebook_location

        style = Style(color_enabled(sys.stdout))
        print(
            style(
                clean(
                    f"{notebook_location(chunk.path, chunk.cell, chunk.start_line, chunk.end_line)}"
                    f"  {chunk.qualname} [{chunk.kind}]"
                ),
                "36",
            )
        )
        print(clean(chunk.text, multiline=True))
    return 0


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "search",
        parents=[common],
        help="hybrid search over the index (exit 1 when nothing credible is found)",
    )
    p.add_argument("query", help="what to look for; - reads it from standard input")
    p.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--text", action="store_true", help="include each chunk's text")
    p.add_argument(
        "--path",
        action="append",
        metavar="GLOB",
        help="only files matching GLOB (repeatable; !GLOB excludes)",
    )
    p.add_argument(
        "--lang", action="append", metavar="LANG", help="only this language (repeatable)"
    )
    p.add_argument(
        "--kind",
        action="append",
        metavar="KIND",
        help="only function, method, class, module, section or text (repeatable)",
    )
    p.add_argument(
        "--compress",
        action="store_true",
        help="each result as signature, docstring and the lines that matter",
    )
    p.add_argument(
        "--budget", type=int, default=None, metavar="N", help="pack the results into N tokens"
    )
    p.add_argument("--jsonl", action="store_true", help="one JSON object per result per line")
    p.add_argument("--no-log", action="store_true", help="do not append to the savings log")
    add_worktree_options(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "show", parents=[common], help="a chunk by id, or exactly the lines PATH:START-END"
    )
    p.add_argument("id", help="chunk id, or path:start-end as compressed results print it")
    add_worktree_options(p)
    p.set_defaults(func=cmd_show)
