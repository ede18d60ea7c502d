"""The CLI's side of `indexer serve`: find a running server for an index and forward a command.

Imports nothing heavy (no numpy, no FAISS, no pygit2): a forwarded `indexer search` costs a
Python start, the argument parser and one round trip on a local socket. Any failure (no server,
a dead server's socket, a timeout, a reply that does not parse) returns None and the command
runs in-process as before, so the server is only ever an accelerator.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

# Commands a server may answer: read-only, and their output depends only on the index.
FORWARDED = frozenset({"search", "show", "related"})
# Environment the server applies while it runs a forwarded command (what changes its output).
ENV_PREFIXES = ("INDEXER_",)
ENV_NAMES = ("NO_COLOR", "TERM")
CONNECT_TIMEOUT = 0.05  # seconds: a live server accepts at once
REPLY_TIMEOUT = 60.0


def runtime_dir() -> Path | None:
    """A directory only this user can enter (0700, owned by us), or None if it cannot be had:
    another user's directory at that path must never receive our queries."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
    path = base / f"indexer-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def socket_path(index_dir: Path) -> Path | None:
    """Where the server of `index_dir` listens (short: a Unix socket path has ~100 bytes)."""
    directory = runtime_dir()
    if directory is None:
        return None
    key = _sha256_hex(str(index_dir.resolve()).encode("utf-8"))[:24]
    return directory / f"{key}.sock"


def _sha256_hex(data: bytes) -> str:
    """sha256 without importing hashlib, which loads OpenSSL (~3 ms of every CLI start)."""
    try:
        from _sha256 import sha256  # CPython <= 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython >= 3.12
        except ImportError:
            from hashlib import sha256
    return str(sha256(data).hexdigest())


def call(index_dir: Path, request: dict[str, Any], timeout: float = REPLY_TIMEOUT) -> Any:
    """Send one request to the server of `index_dir`; its reply, or None when none answers."""
    path = socket_path(index_dir)
    if path is None or not path.exists():
        return None
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(CONNECT_TIMEOUT)
            conn.connect(str(path))
            conn.settimeout(timeout)
            conn.sendall(json.dumps(request).encode("utf-8") + b"\n")
            conn.shutdown(socket.SHUT_WR)
            chunks = []
            while data := conn.recv(1 << 16):
                chunks.append(data)
        return json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None


def forward(index_dir: Path, argv: list[str], stdout_tty: bool) -> int | None:
    """Run a CLI command in the server of `index_dir`; its exit code, or None to run locally."""
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    reply = call(
        index_dir,
        {"op": "run", "argv": argv, "cwd": os.getcwd(), "env": env, "tty": stdout_tty},
    )
    if not isinstance(reply, dict) or not isinstance(reply.get("rc"), int):
        return None
    sys.stdout.write(str(reply.get("stdout", "")))
    sys.stdout.flush()
    sys.stderr.write(str(reply.get("stderr", "")))
    return int(reply["rc"])
