"""The local build's worker pool: processes forked from the build, one task each at a time.

A forked worker starts with the build's modules and vector table already loaded (no second
import, ~0.5 s of CPU per worker under loky) and needs no resource-tracker process (loky starts
two: 51 MiB of the tree's memory on sympy). Each worker has one duplex pipe; a reader thread in
the build receives results as they come and hands the worker its next task at once, so the
workers keep parsing while the build writes a segment. At most `window` tasks are out (running,
or finished and not yet taken): the build's memory does not grow with a slow consumer. Results
are taken in task order. A worker exits with the build (`workers.watch_parent`), and a worker
that dies fails the build with one line instead of hanging it.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

from ..errors import IndexerError
from .workers import watch_parent

PREFETCH = 2  # tasks a worker holds: the one it runs and the next
# The build allocates millions of small acyclic containers (chunk records, term tuples): the
# default thresholds run the cyclic collector ~6 % of the time for nothing to free.
GC_THRESHOLD = (50_000, 20, 100)


def fork_available() -> bool:
    """Forking is safe here: the start method exists and no other thread of this process could
    hold a lock the children would inherit locked (a long-lived server uses loky instead)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


class ForkPool:
    """`workers` forked processes running `function(task)`; `imap` yields results in order."""

    def __init__(
        self, function: Callable[[Any], Any], workers: int, setup: Callable[[], None] | None = None
    ) -> None:
        context = multiprocessing.get_context("fork")
        parent = os.getpid()
        self.function = function
        self.gc_threshold: tuple[int, ...] | None = gc.get_threshold()
        # What exists now (modules, the vector table) is never scanned by the cyclic collector
        # again: in the workers its pages are not dirtied (copied) by the collector either.
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLD)
        self.connections: list[Connection] = []
        self.processes: list[Any] = []
        for _ in range(workers):
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=_serve,
                args=(theirs, function, parent, setup, [*self.connections, ours]),
                daemon=True,
            )
            process.start()
            theirs.close()
            self.connections.append(ours)
            self.processes.append(process)

    def imap(
        self,
        tasks: Sequence[Any],
        window: int,
        work_here: bool = False,
        first: Sequence[int] = (),
    ) -> Iterator[Any]:
        """Results of `tasks`, in order, with at most `window` tasks out at a time. The workers
        start at once, before the first result is asked for. `work_here`: while the next
        result is not ready, the caller runs the next task itself instead of waiting (it is
        one more worker, without one more process's memory). `first`: tasks to run before
        all others, in that order, outside the window (their results wait for their turn)."""
        window = max(window, 1 + work_here)
        state = _Dispatch(self.connections, self.processes, tasks, window, first)
        with state.lock:
            for worker in range(len(self.connections)):
                state.give(worker)
        reader = threading.Thread(target=state.read, name="indexer-pool-reader", daemon=True)
        reader.start()
        return _Results(self, state, reader, work_here)

    def close(self) -> None:
        for connection in self.connections:
            with contextlib.suppress(OSError):  # gone already
                connection.send(None)
        for process in self.processes:
            process.join(timeout=1)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        for connection in self.connections:
            connection.close()
        if self.gc_threshold is not None:  # this process goes on as it was
            gc.set_threshold(*self.gc_threshold)
            gc.unfreeze()
            self.gc_threshold = None
        self.connections, self.processes = [], []


class _Results:
    """The iterator `imap` returns; closing it (or dropping it) stops the workers."""

    def __init__(
        self, pool: ForkPool, state: _Dispatch, reader: threading.Thread, work_here: bool
    ) -> None:
        self.pool, self.state, self.reader, self.work_here = pool, state, reader, work_here
        self.index = 0

    def __iter__(self) -> _Results:
        return self

    def __next__(self) -> Any:
        if self.index >= len(self.state.tasks):
            self.close()
            raise StopIteration
        try:
            result = self._take(self.index)
        except BaseException:
            self.close()
            raise
        self.index += 1
        return result

    def _take(self, index: int) -> Any:
        state = self.state
        while True:
            with state.lock:
                # The caller keeps to half the window, so that while it writes a segment the
                # workers still have the other half to run; rather than idle, it takes more.
                here = self.work_here and index not in state.results
                mine = state.claim(max(1, state.window // 2)) if here else None
                if here and mine is None and index not in state.results:
                    state.lock.wait(0.05)  # a result due very soon is better than a new task
                    if index not in state.results:
                        mine = state.claim()
                if mine is None:
                    return state.take(index)
            value = self.pool.function(state.tasks[mine])  # outside the lock: workers go on
            with state.lock:
                state.results[mine] = value
                state.lock.notify_all()

    def close(self) -> None:
        self.state.stop()
        self.pool.close()
        if self.reader.is_alive() and self.reader is not threading.current_thread():
            self.reader.join(timeout=5)

    def __del__(self) -> None:
        self.close()


class _Dispatch:
    """Which task goes where next, and the results not yet taken (shared with the reader)."""

    def __init__(
        self,
        connections: list[Connection],
        processes: list[Any],
        tasks: Sequence[Any],
        window: int,
        first: Sequence[int],
    ) -> None:
        self.connections, self.processes = connections, processes
        self.tasks, self.window = tasks, window
        self.first = list(reversed(first))  # popped from the end
        self.early = set(first)
        self.lock = threading.Condition()
        self.next_task = 0  # the first task not given out
        self.taken = 0  # tasks whose result the consumer has
        self.running: dict[int, list[int]] = {}  # worker -> its tasks, oldest first
        self.results: dict[int, Any] = {}
        self.failure: str | None = None
        self.stopped = False

    def claim(self, window: int | None = None) -> int | None:
        """The next task: one of `first`, else the next in order if the window (by default
        the pool's) allows (the lock is held)."""
        if self.first:
            return self.first.pop()
        while self.next_task in self.early:
            self.next_task += 1
        limit = self.taken + (self.window if window is None else window)
        if self.next_task >= len(self.tasks) or self.next_task >= limit:
            return None
        self.next_task += 1
        return self.next_task - 1

    def give(self, worker: int) -> None:
        """Send `worker` tasks until it holds PREFETCH, as the window allows (the lock is
        held). A queued task lets it go on while this process cannot answer at once."""
        held = self.running.setdefault(worker, [])
        # Near the end a queued task could wait behind a long one while another process idles.
        ending = len(self.tasks) - self.next_task <= PREFETCH * (len(self.connections) + 1)
        depth = 1 if ending else PREFETCH
        while len(held) < depth and (index := self.claim()) is not None:
            held.append(index)
            self.connections[worker].send((index, self.tasks[index]))

    def read(self) -> None:
        """Reader thread: store each result and give its worker the next task."""
        by_connection = {id(c): w for w, c in enumerate(self.connections)}
        while True:
            with self.lock:
                if self.stopped or self.failure:
                    return
                busy = [self.connections[w] for w, queue in self.running.items() if queue]
            if not busy:
                with self.lock:
                    if self.stopped or (self.next_task >= len(self.tasks) and not self.first):
                        return
                    self.lock.wait(0.5)  # the window is full: wait for the consumer
                continue
            for ready in wait(busy, timeout=0.5):
                worker = by_connection[id(ready)]
                connection = self.connections[worker]
                try:
                    index, ok, value = connection.recv()
                except (EOFError, OSError):
                    self._fail(f"a build worker died ({self._exit_code(worker)})")
                    return
                with self.lock:
                    if not ok:
                        self.failure = f"a build worker failed: {value}"
                        self.lock.notify_all()
                        return
                    self.running[worker].remove(index)
                    self.results[index] = value
                    self.give(worker)
                    self.lock.notify_all()

    def take(self, index: int) -> Any:
        """The result of task `index` once it is in (the lock is held)."""
        while index not in self.results:
            if self.failure:
                raise IndexerError(self.failure)
            self.lock.wait(0.5)
        self.taken = index + 1
        for worker in range(len(self.connections)):
            self.give(worker)
        self.lock.notify_all()
        return self.results.pop(index)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.lock.notify_all()

    def _fail(self, message: str) -> None:
        with self.lock:
            self.failure = message
            self.lock.notify_all()

    def _exit_code(self, worker: int) -> str:
        process = self.processes[worker]
        process.join(timeout=5)
        code = process.exitcode
        if code is not None and code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"


def _serve(
    connection: Connection,
    function: Callable[[Any], Any],
    parent: int,
    setup: Callable[[], None] | None,
    inherited: list[Connection],
) -> None:
    """A worker's loop: a task in, its result out, until the build says stop or goes away.
    Results are sent by a thread: while the build's process holds its GIL (a long parse), its
    reader cannot take them, and the worker goes on with its next task meanwhile."""
    for other in inherited:  # the build's ends of the pipes forked before this one
        other.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the build's to handle
    watch_parent(parent)
    if setup is not None:
        setup()
    outbox: queue.Queue[bytes | None] = queue.Queue(maxsize=1)
    sender = threading.Thread(target=_send_all, args=(connection, outbox), daemon=True)
    sender.start()
    while sender.is_alive():
        try:
            task = connection.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        index, argument = task
        try:
            reply = (index, True, function(argument))
        except Exception as exc:  # reported to the build, which fails
            reply = (index, False, f"{type(exc).__name__}: {exc}")
        outbox.put(bytes(ForkingPickler.dumps(reply)))
    outbox.put(None)
    sender.join()


def _send_all(connection: Connection, outbox: queue.Queue[bytes | None]) -> None:
    while (data := outbox.get()) is not None:
        try:
            connection.send_bytes(data)
        except (EOFError, OSError):
            return  # the build is gone: the worker's loop ends with it
