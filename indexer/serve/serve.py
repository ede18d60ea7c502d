"""`indexer serve`: a long-lived process that answers the CLI's read-only commands.

A cold `indexer search` spends most of its time importing numpy and FAISS and loading the
snapshot. The server pays that once; the CLI then forwards `search`, `show` and `related` over a
Unix socket in a private runtime directory (indexer/serve/serve_client.py) and prints the reply.

- Same answers: the server runs the very same command code (cli.main) with the client's
  arguments, working directory and INDEXER_* environment; only stdout/stderr travel.
- Never stale: every request re-reads CURRENT (Index.open), so an update or a pull is served
  from the next request on; a snapshot is immutable, so what was loaded for it is kept. Nor
  outdated: once a module file of this package changed (an upgrade, an edit), the server hands
  the command back to the CLI and exits.
- One per index: a lock beside the socket, held from start-up, so two servers started at once
  (two first searches) leave one.
- Never exposed: a Unix socket in a 0700 directory of the user (no TCP), one index per server,
  requests answered one at a time.
- Never required: no server, a dead one or a slow one, and the CLI runs the command itself;
  then, by default (INDEXER_SERVE=auto), it starts a server for the next command
  (serve_cli.start_for_next).
The server exits after `--idle-timeout` seconds without requests, on SIGTERM, on `serve --stop`,
or when its index directory disappears.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import IndexerError
from .serve_client import call, socket_path

DEFAULT_IDLE_TIMEOUT = 1800.0


class _Capture(io.StringIO):
    """stdout/stderr of one forwarded command; a terminal if the client's stdout is one."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@contextlib.contextmanager
def _client_context(cwd: str, env: dict[str, str]) -> Iterator[None]:
    """The client's working directory and INDEXER_*/NO_COLOR/TERM for one request."""
    saved_cwd = os.getcwd()
    saved_env = {k: v for k, v in os.environ.items() if k.startswith("INDEXER_")}
    for name in ("NO_COLOR", "TERM"):
        if name in os.environ:
            saved_env[name] = os.environ[name]
    try:
        os.chdir(cwd)
        for name in [*saved_env]:
            os.environ.pop(name, None)
        os.environ.update(env)
        yield
    finally:
        os.chdir(saved_cwd)
        for name in [k for k in os.environ if k.startswith("INDEXER_") or k in env]:
            os.environ.pop(name, None)
        os.environ.update(saved_env)


# What a new server searches before it listens, so that the first forwarded command finds the
# index loaded (postings, defined names, the fast-scan codes) and costs what later ones cost:
# a prose question and a name.
WARM_UP_QUERIES = ("where is the main entry point defined", "main")


class Server:
    def __init__(self, index_dir: Path, idle_timeout: float, repo: str | None = None) -> None:
        self.index_dir = index_dir.resolve()
        self.repo = repo
        self.warmed_up = False  # the warm-up searches answered (status says so)
        self.code: dict[str, int] = {}  # this package's module files: mtime when loaded
        self._lock_fd: int | None = None
        self.idle_timeout = idle_timeout
        self.requests = 0
        self.started = time.time()
        path = socket_path(self.index_dir)
        if path is None:
            raise IndexerError("no private runtime directory for the server's socket")
        self.path = path

    def handle(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            return {"rc": 2, "stderr": "indexer: error: malformed request\n"}
        op = request.get("op")
        if op == "status":
            return dict(self.status(), rc=0)
        if op == "stop":
            return {"rc": 0, "stopping": True}
        if op == "run":
            if self.code_changed():  # no rc: the CLI runs the command itself, with its code
                return {"stale": True, "stopping": True}
            return self.run(request)
        return {"rc": 2, "stderr": f"indexer: error: unknown request {op!r}\n"}

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "index_dir": str(self.index_dir),
            "socket": str(self.path),
            "requests": self.requests,
            "warmed_up": self.warmed_up,
            "uptime_s": round(time.time() - self.started, 1),
        }

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        from .cli import main
        from .serve_client import FORWARDED

        argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
        if (
            not isinstance(argv, list)
            or not all(isinstance(a, str) for a in argv)
            or not argv
            or argv[0] not in FORWARDED
            or not isinstance(cwd, str)
            or not isinstance(env, dict)
        ):
            return {"rc": 2, "stderr": "indexer: error: malformed request\n"}
        out, err = _Capture(bool(request.get("tty"))), _Capture(False)
        context = _client_context(cwd, {str(k): str(v) for k, v in env.items()})
        with context, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv, forward=False)
        self.requests += 1
        return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def serve_forever(self) -> None:
        from ..api import reuse_open_indexes

        reuse_open_indexes()
        if call(self.index_dir, {"op": "status"}, timeout=2.0) is not None:
            raise IndexerError(f"a server for {self.index_dir} is already running")
        self.hold_lock()
        self.warm_up()
        self.code_changed()  # records the modules the warm-up loaded
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a dead server's socket
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(16)
        listener.settimeout(1.0)
        inode = self.path.stat().st_ino
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        last = time.monotonic()
        try:
            while time.monotonic() - last < self.idle_timeout:
                if not self.index_dir.is_dir() or not _same_socket(self.path, inode):
                    break  # the index was removed, or another server took the socket over
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                stop, active = self._answer(conn)
                if active:  # a status probe does not keep an idle server alive
                    last = time.monotonic()
                if stop:
                    break
        finally:
            listener.close()
            if _same_socket(self.path, inode):
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()

    def hold_lock(self) -> None:
        """One server per index, even when several start at once (two first searches): the
        lock beside the socket is held for the server's life."""
        import fcntl

        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise IndexerError(f"a server for {self.index_dir} is already starting") from None
        self._lock_fd = fd

    def code_changed(self) -> bool:
        """Has a module file of this package changed since it was loaded (an upgrade, an
        edit of an editable install)? Then this process's answers may not be the CLI's own.
        A module first seen here is recorded as it is now."""
        changed = False
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if not path or not (name == "indexer" or name.startswith("indexer.")):
                continue
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                return True
            changed |= self.code.setdefault(path, mtime) != mtime
        return changed

    def warm_up(self) -> None:
        """Run WARM_UP_QUERIES as a forwarded search would (same command code, same working
        tree), output discarded, before listening: meanwhile a command runs in its own process.
        Never fails the server (a command then pays what is not loaded yet)."""
        from .cli import main

        where = ["--repo", self.repo] if self.repo else []
        codes = []
        for query in WARM_UP_QUERIES:
            argv = ["search", query, *where, "--index-dir", str(self.index_dir), "--no-log"]
            sink = _Capture(False)
            with (
                contextlib.suppress(Exception),
                contextlib.redirect_stdout(sink),
                contextlib.redirect_stderr(sink),
            ):
                codes.append(main([*argv, "--json"], forward=False))
        self.warmed_up = bool(codes) and all(code in (0, 1) for code in codes)

    def _answer(self, conn: socket.socket) -> tuple[bool, bool]:
        """Answer one connection: (asked to stop, ran a command)."""
        with conn:
            conn.settimeout(10.0)
            try:
                data = b""
                while chunk := conn.recv(1 << 16):
                    data += chunk
                request = json.loads(data)
            except (OSError, ValueError):
                return False, False
            try:
                reply = self.handle(request)
            except Exception as exc:  # never die on one request: the CLI falls back
                reply = {"rc": 1, "stderr": f"indexer: internal error: {exc}\n"}
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(reply).encode("utf-8"))
            ran = isinstance(request, dict) and request.get("op") == "run"
            return bool(reply.get("stopping")), ran


def _same_socket(path: Path, inode: int) -> bool:
    try:
        return path.stat().st_ino == inode
    except OSError:
        return False


def status(index_dir: Path) -> dict[str, Any] | None:
    reply = call(index_dir, {"op": "status"}, timeout=2.0)
    if not isinstance(reply, dict):
        return None
    reply.pop("rc", None)
    return dict(reply, running=True)


def spawn(index_dir: Path, repo: str | None, idle_timeout: float | None) -> None:
    """Start a detached server process (it refuses to start if one is already running)."""
    args = [sys.executable, "-m", "indexer", "serve", "--index-dir", str(index_dir)]
    args += ["--idle-timeout", str(idle_timeout or DEFAULT_IDLE_TIMEOUT)]
    args += ["--repo", repo] if repo else []
    subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def start_background(index_dir: Path, repo: str | None, idle_timeout: float) -> dict[str, Any]:
    """Start a detached server and wait until it answers (a few seconds at most)."""
    running = status(index_dir)
    if running is not None:
        return dict(running, started=False)
    spawn(index_dir, repo, idle_timeout)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        answer = status(index_dir)
        if answer is not None:
            return dict(answer, started=True)
        time.sleep(0.05)
    raise IndexerError("the background server did not start; run `indexer serve` to see why")


def stop(index_dir: Path) -> bool:
    """Ask the server of `index_dir` to exit; False if none was running."""
    return call(index_dir, {"op": "stop"}, timeout=5.0) is not None
