"""`indexer serve` and the forwarding of read-only commands to a running server (serve.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from .output import emit_json as _emit_json

# INDEXER_SERVE: "auto" (the default) forwards to a running server and, when none answered,
# starts one after the command succeeded, for the next; "on" forwards only; "0"/"off" never.
SERVE_ENV = "INDEXER_SERVE"
SPAWN_INTERVAL = 10.0  # seconds between two servers started for one index


def serve_mode() -> str:
    mode = os.environ.get(SERVE_ENV, "auto").strip().lower()
    return "off" if mode in ("0", "off", "no", "false") else mode


def forwarded(args: argparse.Namespace, argv: list[str], index_dir: Path) -> int | None:
    """The exit code of the command as answered by a running server, or None."""
    if serve_mode() == "off":
        return None
    from .serve_client import forward

    if getattr(args, "query", None) == "-":  # the server cannot read our standard input
        from .search_cli import read_query

        args.query = read_query("-")  # also what a local run uses if no server answers
        rest = list(argv)
        rest.remove("-")
        argv = [*rest, "--", args.query]  # after `--`: a query may start with a dash
    return forward(index_dir, argv, sys.stdout.isatty())


def start_for_next(args: argparse.Namespace, index_dir: Path) -> None:
    """After a command answered in-process (no server did) with an index there: start a
    detached server for the next command, as INDEXER_SERVE=auto asks. Never fails the command."""
    if serve_mode() != "auto" or not (index_dir / "CURRENT").is_file():
        return
    from .serve import spawn
    from .serve_client import socket_path

    path = socket_path(index_dir)
    if path is None:  # no private runtime directory to listen in
        return
    # At most one start per SPAWN_INTERVAL: a server that cannot start (or exits at once)
    # must not cost every command a process.
    marker = path.with_suffix(".spawned")
    with contextlib.suppress(OSError):
        if time.time() - marker.stat().st_mtime < SPAWN_INTERVAL:
            return
    with contextlib.suppress(OSError):  # only an accelerator
        marker.touch()
        spawn(index_dir, args.repo, None)


def cmd_serve(args: argparse.Namespace) -> int:
    from ..index.gitdir import index_dir_of
    from . import serve

    index_dir = index_dir_of(args.repo, args.index_dir)
    if args.stop:
        stopped = serve.stop(index_dir)
        info: dict[str, Any] = {"stopped": stopped, "index_dir": str(index_dir)}
        _emit_json(info) if args.json else print(
            "server stopped" if stopped else "no server was running"
        )
        return 0
    if args.status:
        status = serve.status(index_dir)
        if args.json:
            _emit_json(status or {"running": False})
        elif status:
            print(
                f"serving {status['index_dir']} (pid {status['pid']}, "
                f"{status['requests']} requests, up {status['uptime_s']:.0f}s)"
            )
        else:
            print("no server running")
        return 0
    if args.background:
        info = serve.start_background(index_dir, args.repo, args.idle_timeout)
        if args.json:
            _emit_json(info)
        else:
            verb = "started" if info["started"] else "already running"
            print(f"server {verb}: pid {info['pid']}, socket {info['socket']}")
        return 0
    serve.Server(index_dir, args.idle_timeout, args.repo).serve_forever()
    return 0
