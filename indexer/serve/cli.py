"""Command line: mirrors the Python API; every command has --json."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import IndexerError
from ..terminal import clean
from ..threads import single_threaded_math
from . import agent_cli, search_cli, serve_cli, share_cli, status_cli
from .one_command import no_collection
from .output import emit_json as _emit_json
from .serve_client import FORWARDED


def cmd_build(args: argparse.Namespace) -> int:
    from ..index.build import build_index

    report = build_index(
        args.repo,
        args.rev,
        index_dir=args.index_dir,
        jobs=args.jobs,
        progress=None if not args.json else False,
        backend=args.backend,
        scheduler=args.scheduler,
        segment_chunks=args.segment_chunks,
    )
    for warning in report.warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    if args.json:
        _emit_json(report.to_dict())
    else:
        skipped = ", ".join(f"{k} {v}" for k, v in report.skipped.items()) or "none"
        redacted = sum(report.redacted.values())
        fallback = "".join(f", as text: {k} {v}" for k, v in report.fallback.items())
        print(
            f"indexed {report.commit[:12]}: {report.files} files, {report.chunks} chunks "
            f"in {report.seconds:.1f}s ({report.bytes / 1e6:.1f} MB); skipped: {skipped}"
            + fallback
            + (f"; {redacted} secret values redacted" if redacted else "")
        )
    return 0


def _index_dir(args: argparse.Namespace) -> Path:
    from ..index.gitdir import index_dir_of

    return index_dir_of(args.repo, args.index_dir)


def cmd_update(args: argparse.Namespace) -> int:
    from ..fresh.freshness import run_updates, start_background_update

    index_dir = _index_dir(args)
    if args.background:
        start_background_update(args.repo, index_dir)  # returns at once, never fails git
        return 0
    if args.quiet:
        return run_updates(args.repo, index_dir, args.rev)
    from ..index.build import update_index

    report = update_index(
        args.repo,
        args.rev,
        index_dir=index_dir,
        jobs=args.jobs,
        progress=None if not args.json else False,
    )
    if args.json:
        _emit_json(report.to_dict())
    else:
        print(
            f"{report.mode} update to {report.commit[:12]}: {report.files} files, "
            f"{report.chunks} chunks in {report.seconds:.2f}s ({report.reused_files} files "
            f"reused, {report.cached_files} from cache, {report.chunked_files} chunked)"
        )
    return 0


def cmd_hooks(args: argparse.Namespace) -> int:
    from ..fresh import hooks

    changes = hooks.install(args.repo) if args.action == "install" else hooks.uninstall(args.repo)
    if args.json:
        _emit_json([c.to_dict() for c in changes])
    else:
        for c in changes:
            print(f"{c.hook:14} {c.action}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ..fresh.provenance import verify_index

    result = verify_index(args.repo, args.index_dir)
    if args.json:
        _emit_json(result)
    else:
        print(
            f"ok: {result['files_checked']} files match their checksums, "
            f"{result['chunks_checked']} chunks match commit {result['commit'][:12]}"
        )
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    from ..fresh.freshness import update_lock
    from ..index.merge import merge

    index_dir = _index_dir(args)
    with update_lock(index_dir, wait=True):
        result = merge(index_dir, everything=not args.auto)
    if args.json:
        _emit_json(result)
    else:
        print(
            f"{result['segments_before']} segments -> {result['segments_after']} "
            f"({result['merged']} merged in {result['seconds']:.2f}s)"
        )
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..eval.evaluate import evaluate, format_table, load_dataset
    from ..search.fusion import FusionConfig

    dataset = Path(args.dataset)
    cases = load_dataset(dataset, Path(args.repo_root) if args.repo_root else dataset.parent)
    if args.limit:
        cases = cases[: args.limit]
    fusion = FusionConfig.load(Path(args.fusion)) if args.fusion else None
    cache = Path(
        args.cache_dir
        or os.environ.get("INDEXER_EVAL_CACHE")
        or Path.home() / ".cache" / "indexer" / "eval"
    )
    log = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    report = evaluate(
        cases,
        cache,
        systems=args.systems.split(","),
        fusion=fusion,
        cut=not args.no_cut,
        rebuild=args.rebuild,
        log=log,
    )
    if args.json:
        _emit_json(report.to_dict())
    else:
        print(format_table(report, per_group=args.per_repo))
    return 0


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, sized like shutil.get_terminal_size without importing shutil
    (argparse makes one for every argument it adds; shutil loads bz2 and lzma)."""

    def __init__(self, prog: str) -> None:
        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 80
        super().__init__(prog, width=(columns or 80) - 2)


class _Skipped:
    """The parser of a command that is not being run: every call on it does nothing."""

    def __getattr__(self, name: str) -> Any:
        return self._ignore

    def _ignore(self, *args: Any, **kwargs: Any) -> _Skipped:
        return self


class _OneCommand:
    """Subparsers that build only the parser of `only` (None: all of them). argparse formats
    each argument as it is added (and asks the terminal its size each time): building all
    commands' parsers costs a one-shot `indexer search` more than it needs."""

    def __init__(self, sub: Any, only: str | None) -> None:
        self.sub, self.only = sub, only
        self.names: list[str] = []

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self.names.append(name)
        if self.only is None or name == self.only:
            return self.sub.add_parser(name, formatter_class=_Formatter, **kwargs)
        return _Skipped()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line parser; `only`: the command being run (the others are not built,
    unless `only` names none of them, for argparse's error message)."""
    parser = argparse.ArgumentParser(
        prog="indexer",
        description="Git-integrated code index for AI coding agents.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"indexer {__version__}")
    common = argparse.ArgumentParser(add_help=False, formatter_class=_Formatter)
    common.add_argument("--repo", default=None, help="repository path (default: current directory)")
    common.add_argument(
        "--index-dir", default=None, help="artifact directory (default: <git-dir>/indexer)"
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    sub = _OneCommand(parser.add_subparsers(dest="command", required=True), only)

    p = sub.add_parser("build", parents=[common], help="index the tree of a commit")
    p.add_argument("--rev", default=None, help="commit to index (default: HEAD)")
    p.add_argument("--jobs", type=int, default=None, help="parallel indexing processes (local)")
    p.add_argument(
        "--backend",
        choices=("local", "dask"),
        default="local",
        help="where files are indexed: a local process pool, or a Dask cluster (--scheduler)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler address for --backend dask, e.g. tcp://10.0.0.5:8786",
    )
    p.add_argument(
        "--segment-chunks",
        type=int,
        default=None,
        metavar="N",
        help="chunks per segment: the build's memory bound (default 262144)",
    )
    p.set_defaults(func=cmd_build)

    search_cli.add_commands(sub, common)  # search, show

    p = sub.add_parser("status", parents=[common], help="what is indexed and where")
    p.set_defaults(func=status_cli.cmd_status)

    p = sub.add_parser(
        "update", parents=[common], help="bring the index to HEAD, re-chunking only changed blobs"
    )
    p.add_argument("--rev", default=None, help="commit to index (default: HEAD)")
    p.add_argument("--jobs", type=int, default=None, help="parallel chunking processes")
    p.add_argument(
        "--background",
        action="store_true",
        help="start a detached update and return at once (for git hooks)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="lock, coalesce triggers, log failures instead of printing them",
    )
    p.set_defaults(func=cmd_update)

    p = sub.add_parser("hooks", parents=[common], help="install or remove the git hooks")
    p.add_argument("action", choices=["install", "uninstall"])
    p.set_defaults(func=cmd_hooks)

    share_cli.add_commands(sub, common)  # publish, pull, ci

    p = sub.add_parser(
        "verify", parents=[common], help="check every artifact checksum and chunk against git"
    )
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser(
        "optimize", parents=[common], help="merge the index's segments (all, or as --auto does)"
    )
    p.add_argument("--auto", action="store_true", help="only what the tiered merge policy asks for")
    p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("eval", help="retrieval quality on a dataset of queries with gold files")
    p.add_argument("--dataset", required=True, help="JSONL with query, gold_files, gold_functions")
    p.add_argument("--repo-root", default=None, help="directory holding the dataset's trees")
    p.add_argument("--systems", default="fused,bm25,dense,file-bm25")
    p.add_argument("--fusion", default=None, help="fusion.json to evaluate (default: artifacts/)")
    p.add_argument("--cache-dir", default=None, help="where built eval indexes are cached")
    p.add_argument("--limit", type=int, default=0, help="only the first N queries")
    p.add_argument("--no-cut", action="store_true", help="disable the adaptive threshold")
    p.add_argument("--per-repo", action="store_true", help="also a table per repository")
    p.add_argument("--rebuild", action="store_true", help="rebuild cached indexes")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="keep the index loaded; search/show/related are then answered by this process",
    )
    p.add_argument("--background", action="store_true", help="detach and return at once")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="exit after this long without requests (default 1800)",
    )
    p.add_argument("--stop", action="store_true", help="stop the running server")
    p.add_argument("--status", action="store_true", help="is a server running, and its counts")
    p.set_defaults(func=serve_cli.cmd_serve)
    agent_cli.add_commands(sub, common)  # related, mcp, savings, agents
    if only is not None and only not in sub.names:
        return build_parser()
    return parser


def main(argv: Sequence[str] | None = None, forward: bool = True) -> int:
    """Run one command; `forward`: let a running `indexer serve` answer read-only ones."""
    starts_here = "numpy" not in sys.modules  # this process starts here: numpy is not loaded
    if starts_here:
        # One command's matrices are small: OpenBLAS starting a thread per core at import and
        # spinning them up on the first product costs more than it saves (a cold search at
        # 157k chunks: ~130 ms of dense scan instead of ~20 ms on a busy 2-core machine).
        single_threaded_math()  # before numpy loads: only the environment, no cost
    argv = list(sys.argv[1:] if argv is None else argv)
    # A process started to answer one search: no cyclic collection (indexer/serve/one_command.py;
    # not in a process that calls main() again and again, which would keep its garbage).
    one_read = starts_here and forward and bool(argv) and argv[0] in FORWARDED
    with no_collection() if one_read else nullcontext():
        return _command(argv, forward)


def _command(argv: list[str], forward: bool) -> int:
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
    args = parser.parse_args(argv)
    args.one_shot = forward  # this process answers one command (a server passes False)
    try:
        index_dir = _index_dir(args) if forward and args.command in FORWARDED else None
        if index_dir is not None:
            code = serve_cli.forwarded(args, argv, index_dir)
            if code is not None:
                return code
        code = int(args.func(args))
        if index_dir is not None and code in (0, 1):  # answered (1: nothing found)
            serve_cli.start_for_next(args, index_dir)
        return code
    except IndexerError as exc:
        print(f"indexer: error: {clean(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("indexer: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line for users, the traceback with INDEXER_DEBUG=1
        if os.environ.get("INDEXER_DEBUG"):
            raise
        print(
            f"indexer: internal error: {type(exc).__name__}: {clean(exc)} "
            "(set INDEXER_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
