"""Threads of a search process: one math-library thread, and one background worker.

A query's matrix products are small (a few hundred rows): OpenBLAS and OpenMP starting and
spinning a thread per core cost more than they save, and on a busy machine idle spinning
threads compete with the query itself (docs/benchmarks.md, "Cold processes" and "round 2").
What the environment says explicitly is kept.

The worker runs a query's dense search while its BM25 runs in the caller's thread (`Job`):
both spend their time in numpy and FAISS, which release the GIL.
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
from _queue import SimpleQueue
from collections.abc import Callable
from typing import Any, Generic, TypeVar

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_limited = False


def single_threaded_math() -> None:
    """Limit BLAS/OpenMP to one thread for this process, once. Before numpy is imported the
    environment is enough (libraries read it as they load: no cost); after, the libraries
    already loaded are limited through threadpoolctl (~5 ms, once per process), and the
    environment covers those loaded later (FAISS's OpenBLAS and OpenMP)."""
    global _limited
    if _limited or any(name in os.environ for name in VARIABLES):
        return  # done, or the user (or a one-shot CLI) chose the thread counts
    _limited = True
    for name in VARIABLES:
        os.environ[name] = "1"
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)


T = TypeVar("T")
_jobs: SimpleQueue[Job[Any]] | None = None


class Job(Generic[T]):
    """`fn(*args)` run by the process's one background thread while the caller goes on (a
    query's dense search beside its BM25: numpy and FAISS release the GIL); `result` waits
    for it. A job must not wait for another job."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        global _jobs
        self._fn, self._args = fn, args
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = _thread.allocate_lock()
        self._done.acquire()
        if _jobs is None:
            _jobs = SimpleQueue()
            threading.Thread(target=_work, args=(_jobs,), name="indexer-jobs", daemon=True).start()
        _jobs.put(self)

    def _run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as error:  # raised again in the caller's thread
            self._error = error
        finally:
            self._fn = self._args = None  # type: ignore[assignment]
            self._done.release()

    def result(self) -> T:
        """The value (or the error) of the call, once it has run."""
        with self._done:
            pass
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def _work(jobs: SimpleQueue[Job[Any]]) -> None:
    while True:
        jobs.get()._run()


def _forget_jobs() -> None:
    global _jobs
    _jobs = None  # a forked child has no background thread: the next job starts its own


os.register_at_fork(after_in_child=_forget_jobs)
