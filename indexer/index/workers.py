"""Worker processes that never outlive the command that started them.

joblib's loky workers idle for up to 5 minutes after their last task and, when the parent is
killed (`kill -9`, an OOM kill), are re-parented to init and linger with their resource
trackers (40-60 MB each). Every pool the indexer starts runs `watch_parent` in each worker:
a daemon thread that exits the worker as soon as its parent process is gone. Loky's resource
tracker exits by itself once no process holds its pipe, that is once the workers are gone.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from functools import cache
from typing import Any

POLL_SECONDS = 0.5
M_MMAP_THRESHOLD = -3  # glibc mallopt parameters
M_TRIM_THRESHOLD = -1
MMAP_THRESHOLD = 256 * 1024
SEARCH_MMAP_BYTES = 2 << 20
SEARCH_TRIM_BYTES = 8 << 20
SEARCH_WORD_CACHE = 1 << 12  # words per cache in a long-lived search process (tokens.py)


@cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018  (glibc only)
        # A fixed threshold: glibc's dynamic one climbs to 32 MiB after a large file's parse
        # buffers are freed, and later large buffers then stay in the heap for good.
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):
        return None
    return libc


def fixed_heap() -> None:
    """The fixed glibc mmap threshold for this process (see `_libc`): large arrays freed go
    back to the OS at once instead of staying in a heap that only grows."""
    _libc()


@cache
def search_heap() -> None:
    """glibc's thresholds for a long-lived search process, fixed: arrays over SEARCH_MMAP_BYTES
    (a huge query's buffers, dropped after it) are mapped and go back to the OS when freed;
    smaller ones, a query's temporaries, come from a heap that keeps what it frees (a fresh
    page costs a fault: with the build's 256 KB threshold a search was ~0.35 ms slower)."""
    from .tokens import bound_query_caches

    bound_query_caches(SEARCH_WORD_CACHE)
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, SEARCH_MMAP_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, SEARCH_TRIM_BYTES)


def release_memory() -> None:
    """Hand freed heap pages back to the OS (glibc; a no-op elsewhere). A worker that parsed a
    huge generated file otherwise keeps its peak for the rest of the build: parse trees and
    chunk texts are freed, but the heap stays fragmented and large."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def watch_parent(parent_pid: int) -> None:
    """Worker initializer: exit when `parent_pid` is no longer this process's parent."""
    _libc()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="indexer-parent-watch", daemon=True).start()


def parallel(jobs: int, **kwargs: Any) -> Any:
    """A joblib Parallel over loky workers that die with this process."""
    from joblib import Parallel
    from joblib._parallel_backends import LokyBackend

    backend = LokyBackend(initializer=watch_parent, initargs=(os.getpid(),))
    return Parallel(n_jobs=jobs, backend=backend, **kwargs)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
