"""The local build's pool: forked workers plus the build's own process, results in order."""

from __future__ import annotations

import filecmp
import os
import threading
import time
from pathlib import Path

import psutil
import pytest

from indexer.errors import IndexerError
from indexer.index import cluster
from indexer.index.build import build_index
from indexer.index.forkpool import ForkPool, fork_available

from .conftest import PYTHON_BILLING, MakeRepo
from .test_incremental import _segments

pytestmark = pytest.mark.skipif(not fork_available(), reason="needs fork and a single thread")


def _square_slowly(n: int) -> tuple[int, int]:
    time.sleep(0.002 * (n % 5))  # uneven tasks: results arrive out of order
    return n * n, os.getpid()


def test_results_in_order_with_large_tasks_first_and_the_caller_working() -> None:
    pool = ForkPool(_square_slowly, 2)
    workers = {p.pid for p in pool.processes}
    results = list(pool.imap(list(range(60)), window=4, work_here=True, first=[50, 7, 30]))
    assert [r for r, _ in results] == [n * n for n in range(60)]
    by = {pid for _, pid in results}
    assert os.getpid() in by and by & workers  # the caller and the workers both ran tasks
    assert not any(psutil.pid_exists(pid) and _alive(pid) for pid in workers)  # all gone


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _fail_on_seven(n: int) -> int:
    if n == 7:
        raise ValueError("seven")
    return n


def _die_on_seven(n: int) -> int:
    if n == 7 and os.getpid() != PARENT:
        os._exit(3)
    return n


PARENT = os.getpid()


def test_a_failing_or_dying_worker_fails_the_build_with_one_line() -> None:
    with pytest.raises(IndexerError, match=r"^a build worker failed: ValueError: seven$"):
        list(ForkPool(_fail_on_seven, 1).imap(list(range(20)), window=4, first=[7]))
    with pytest.raises(IndexerError, match=r"^a build worker died \(exit code 3\)$"):
        list(ForkPool(_die_on_seven, 1).imap(list(range(20)), window=4, first=[7]))


def test_the_window_bounds_what_waits_for_the_consumer() -> None:
    started: list[int] = []
    pool = ForkPool(lambda n: (n, time.monotonic()), 1)
    results = pool.imap(list(range(30)), window=3)
    first = next(iter(results))
    time.sleep(0.3)  # a slow consumer: the worker may run at most the window ahead
    state = results.state  # type: ignore[attr-defined]
    with state.lock:
        started.append(state.next_task)
    assert first[0] == 0 and started[0] <= 1 + 3
    assert [n for n, _ in results] == list(range(1, 30))


def _files(n: int) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        f"pkg/m{i:03d}.py": f"def helper_{i}(value):\n    return g_{i % 7}(value) * {i}\n"
        for i in range(n)
    }
    files["pkg/big.py"] = PYTHON_BILLING * 400  # a large file: runs first, alone
    return files


def _same_segments(a: Path, b: Path) -> None:
    sa, sb = _segments(a), _segments(b)
    assert len(sa) == len(sb) > 1
    for x, y in zip(sa, sb, strict=True):
        names = sorted(p.name for p in x.iterdir())
        assert names == sorted(p.name for p in y.iterdir())
        for name in names:
            assert filecmp.cmp(x / name, y / name, shallow=False), name


def test_pool_build_equals_one_process_build(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo(_files(cluster.MIN_PARALLEL_FILES + 20))
    alone = build_index(repo, index_dir=tmp_path / "one", jobs=1, segment_chunks=60)
    for jobs in (2, 3):
        pooled = build_index(repo, index_dir=tmp_path / f"p{jobs}", jobs=jobs, segment_chunks=60)
        assert (pooled.files, pooled.chunks) == (alone.files, alone.chunks)
        _same_segments(tmp_path / "one", tmp_path / f"p{jobs}")


def test_a_process_with_threads_builds_on_loky(make_repo: MakeRepo, tmp_path: Path) -> None:
    """Forking a process with other threads could copy a lock held by one of them: such a
    process (a long-lived server) builds on loky's pool instead, with the same segments."""
    repo = make_repo(_files(cluster.MIN_PARALLEL_FILES + 5))
    build_index(repo, index_dir=tmp_path / "fork", jobs=2, segment_chunks=60)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not fork_available()
        build_index(repo, index_dir=tmp_path / "loky", jobs=2, segment_chunks=60)
    finally:
        stop.set()
        other.join()
    _same_segments(tmp_path / "fork", tmp_path / "loky")
