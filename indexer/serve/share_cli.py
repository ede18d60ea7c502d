"""`indexer publish`, `pull` and `ci`: the CLI skin of indexer/fresh/share.py."""

from __future__ import annotations

import argparse
from typing import Any

from ..terminal import clean
from .output import emit_json


def cmd_publish(args: argparse.Namespace) -> int:
    from ..fresh.share import publish

    result = publish(args.repo, args.index_dir, args.ref, chain=not args.no_chain)
    if args.json:
        emit_json(result)
    elif not result["changed"]:
        print(
            clean(
                f"{result['ref']} already holds this index of {result['indexed_commit'][:12]} "
                "(nothing to publish)"
            )
        )
    else:
        print(
            clean(
                f"published index of {result['indexed_commit'][:12]} as {result['ref']} "
                f"({result['commit'][:12]}); share it with `git push origin {result['ref']}`"
            )
        )
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from ..fresh.share import pull

    result = pull(args.repo, args.index_dir, args.ref, remote=args.remote)
    if args.json:
        emit_json(result)
    elif not result["adopted"] and not result["updated"]:
        print(f"the local index is already for HEAD ({result['head'][:12]}); nothing to pull")
    else:
        extra = " and updated it to HEAD" if result["updated"] else ""
        print(
            clean(f"adopted the index of {result['indexed_commit'][:12]} from {result['ref']}")
            + extra
        )
    return 0


def cmd_ci(args: argparse.Namespace) -> int:
    from ..fresh.share import ci

    result = ci(args.repo, args.index_dir, args.ref, remote=args.remote, push=args.push)
    if args.json:
        emit_json(result)
    else:
        b, p = result["build"], result["publish"]
        start = f" from {result['started_from']}" if result["started_from"] else ""
        done = "published" if p["changed"] else "unchanged, not republished"
        pushed = f"; pushed to {args.remote}" if result["pushed"] else ""
        print(
            clean(
                f"{b['mode']} build of {b['commit'][:12]}{start} ({b['chunks']} chunks, "
                f"{b['seconds']:.1f}s); {p['ref']} {done}{pushed}"
            )
        )
    return 0


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    ref_help = "ref name (default: refs/indexer/<branch>)"
    p = sub.add_parser(
        "publish",
        parents=[common],
        help="commit the index to a dedicated ref (refs/indexer/<branch>)",
    )
    p.add_argument("--ref", default=None, help=ref_help)
    p.add_argument(
        "--no-chain",
        action="store_true",
        help="start a new history on the ref (a parentless commit; needs a forced push)",
    )
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser(
        "pull",
        parents=[common],
        help="fetch and adopt a published index, then bring it to HEAD",
    )
    p.add_argument(
        "--ref", default=None, help="adopt exactly this ref (default: the best for HEAD)"
    )
    p.add_argument(
        "--remote", default=None, help="fetch refs/indexer/* from this remote first (e.g. origin)"
    )
    p.set_defaults(func=cmd_pull)

    p = sub.add_parser("ci", parents=[common], help="build (incrementally) and publish, for CI")
    p.add_argument("--ref", default=None, help=ref_help)
    p.add_argument("--remote", default=None, help="start from the index published on this remote")
    p.add_argument(
        "--push", action="store_true", help="push the ref to --remote when the index changed"
    )
    p.set_defaults(func=cmd_ci)
