"""Where the build's per-file work runs: this process, a local pool, or a Dask cluster.

The work is the same function everywhere (`pipeline.index_batch`). Locally it runs in workers
forked from the build (forkpool.py: no re-import, no resource-tracker processes), or in a loky
pool through joblib where forking is not safe (no fork on the platform, or other threads in
this process); on Dask, joblib's "dask" backend hands each batch to the cluster that
`distributed.Client(ADDRESS)` connects to. Results stream back in submission order, so the main
process appends them to the segments as they come. Cluster workers read blobs from the
repository path: it must be on a filesystem they share with this machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial

from ..errors import IndexerError
from ..source.pathrules import MAX_FILE_BYTES
from .pipeline import (
    BATCH_FILES,
    BuildContext,
    FileResult,
    _repository,
    index_batch,
)

BACKENDS = ("local", "dask")
CONNECT_SECONDS = 10
MIN_PARALLEL_FILES = 200  # below this a pool costs more than it saves
# Batches out per process (running, or done and not yet taken): enough for the workers to run
# on while the build writes a segment (~1 s, ~3 batches), few enough to bound what waits in
# memory (~1 MiB a batch).
WINDOW_PER_WORKER = 6
BATCH_BYTES = 256 * 1024  # source per batch (`large_first`): ~0.3 s of a worker's time
LARGE_BYTES = 128 * 1024  # a file this large runs first, alone (`large_first`)
LARGE_MAX_FILES = 64  # at most this many: their results wait in memory for their turn


def run_batches(
    context: BuildContext,
    items: list[tuple[str, str, str]],
    jobs: int,
    backend: str = "local",
    scheduler: str | None = None,
) -> Iterator[list[FileResult]]:
    """The results of `items` (path, blob, language), batch by batch, in order. A local pool
    starts working at once, before the caller asks for the first result."""
    if backend not in BACKENDS:
        raise IndexerError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend == "local" and scheduler:
        raise IndexerError("--scheduler is for --backend dask")
    batches = [items[i : i + BATCH_FILES] for i in range(0, len(items), BATCH_FILES)]
    if backend == "dask":
        return _dask(context, batches, scheduler)
    if jobs <= 1 or len(items) < MIN_PARALLEL_FILES:
        return (index_batch(context, batch) for batch in batches)
    from .forkpool import (
        ForkPool,
        fork_available,
    )  # (multiprocessing: ~10 ms an update need not pay)

    if fork_available():
        batches, first = large_first(items, blob_sizes(context.repo_path, items))
        # This process is one of the `jobs`: it runs batches itself while it waits for a
        # result, so the build holds one process's fixed memory fewer.
        work = partial(index_batch, context)
        pool = ForkPool(work, jobs - 1, setup=_repository.cache_clear)
        return pool.imap(batches, WINDOW_PER_WORKER * jobs, work_here=True, first=first)
    from joblib import delayed

    from .workers import parallel

    loky = parallel(jobs, return_as="generator", batch_size=1)
    results: Iterator[list[FileResult]] = loky(delayed(index_batch)(context, b) for b in batches)
    return results


def blob_sizes(repo_path: str, items: list[tuple[str, str, str]]) -> list[int]:
    """Each item's blob size, from the object headers (~30 us a file, no blob read)."""
    import pygit2

    odb = pygit2.Repository(repo_path).odb
    return [int(odb.read_header(blob)[1]) for _, blob, _ in items]


def large_first(
    items: list[tuple[str, str, str]], sizes: list[int]
) -> tuple[list[list[tuple[str, str, str]]], list[int]]:
    """Batches of `items` in path order, of at most BATCH_FILES files and BATCH_BYTES of source
    (tasks of even length: no process waits long for another's), every large file alone in
    its batch; and the large files' batches, largest first: they run at the start, while the
    build holds little else. A parse tree takes ~80 bytes per byte of source (60 MiB for
    sympy's 733 KB generated `rubi` rules); parsed late they would meet a worker's full caches
    and the collector's segment, and leave a fragmented heap for the rest of the build."""
    read = [i for i in range(len(items)) if LARGE_BYTES < sizes[i] <= MAX_FILE_BYTES]
    large = set(sorted(read, key=lambda i: -sizes[i])[:LARGE_MAX_FILES])  # bigger: skipped
    batches: list[list[tuple[str, str, str]]] = []
    first: list[tuple[int, int]] = []  # (size, batch)
    run: list[tuple[str, str, str]] = []
    run_bytes = 0
    for i, item in enumerate(items):
        size = min(sizes[i], MAX_FILE_BYTES)
        if run and (i in large or len(run) == BATCH_FILES or run_bytes + size > BATCH_BYTES):
            batches.append(run)
            run, run_bytes = [], 0
        if i in large:
            first.append((sizes[i], len(batches)))
            batches.append([item])
        else:
            run.append(item)
            run_bytes += size
    if run:
        batches.append(run)
    return batches, [b for _, b in sorted(first, key=lambda f: (-f[0], f[1]))]


def connect(scheduler: str | None) -> contextlib.AbstractContextManager[object]:
    """A `distributed.Client` of the scheduler at `scheduler`, or a one-line IndexerError."""
    if not scheduler:
        raise IndexerError("--backend dask needs --scheduler ADDRESS (e.g. tcp://host:8786)")
    try:
        from distributed import Client
    except ImportError:
        raise IndexerError(
            "--backend dask needs dask.distributed: pip install 'git-code-indexer[distributed]'"
        ) from None
    try:
        client: contextlib.AbstractContextManager[object] = Client(  # type: ignore[no-untyped-call]
            scheduler, timeout=CONNECT_SECONDS, set_as_default=False
        )
    except (OSError, TimeoutError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IndexerError(f"cannot reach the Dask scheduler at {scheduler}: {reason}") from None
    return client


def _dask(
    context: BuildContext, batches: list[list[tuple[str, str, str]]], scheduler: str | None
) -> Iterator[list[FileResult]]:
    from joblib import Parallel, delayed, parallel_config

    with connect(scheduler) as client, parallel_config(backend="dask", client=client):
        pool = Parallel(n_jobs=-1, return_as="generator", batch_size=1)
        yield from pool(delayed(index_batch)(context, b) for b in batches)
