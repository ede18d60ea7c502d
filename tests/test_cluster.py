"""Builds on a real Dask cluster: a scheduler and two workers, started here as processes."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer import Index
from indexer.index.build import build_index
from indexer.index.store import current_generation, read_generation, segment_dir

from .conftest import SAMPLE_FILES, MakeRepo, run_cli

pytest.importorskip("distributed", reason="needs the [distributed] extra (dask.distributed)")

QUERIES = ["InvoiceCalculator", "retry after failure", "shopping cart items", "ring buffer"]


def _dask_command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("dask")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "dask", *args]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a running `dask scheduler` with two `dask worker` processes."""
    from distributed import Client

    work = tmp_path_factory.mktemp("dask")
    address_file = work / "scheduler.json"
    quiet = {"cwd": work, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [
        subprocess.Popen(
            _dask_command(
                "scheduler",
                "--port",
                "0",
                "--dashboard-address",
                ":0",
                "--scheduler-file",
                str(address_file),
            ),
            **quiet,  # type: ignore[call-overload]
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert address_file.exists(), "dask scheduler did not start"
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    _dask_command(
                        "worker",
                        "--scheduler-file",
                        str(address_file),
                        "--nthreads",
                        "1",
                        "--dashboard-address",
                        ":0",
                        "--local-directory",
                        str(work),
                    ),
                    **quiet,  # type: ignore[call-overload]
                )
            )
        with Client(scheduler_file=str(address_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            address = str(client.scheduler.address)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def test_dask_build_equals_local_build(scheduler: str, make_repo: MakeRepo, tmp_path: Path) -> None:
    extra: dict[str, str | bytes] = {
        f"pkg/module_{i}.py": f"def helper_{i}(value):\n    return value * {i}\n" for i in range(40)
    }
    repo = make_repo({**SAMPLE_FILES, **extra})
    # Small segments: the build streams several, and each must be the same on the cluster.
    local = build_index(repo, index_dir=tmp_path / "local", progress=False, segment_chunks=40)
    shutil.rmtree(repo / ".git" / "indexer", ignore_errors=True)  # no blob cache to lean on
    result = run_cli(
        "build", "--repo", str(repo), "--index-dir", str(tmp_path / "dask"), "--json",
        "--backend", "dask", "--scheduler", scheduler, "--segment-chunks", "40",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    local_segments, dask_segments = segments(tmp_path / "local"), segments(tmp_path / "dask")
    assert len(local_segments) == len(dask_segments) > 1
    for a, b in zip(local_segments, dask_segments, strict=True):
        names = sorted(p.name for p in a.iterdir())
        assert names == sorted(p.name for p in b.iterdir())
        for name in names:
            assert filecmp.cmp(a / name, b / name, shallow=False), name
    assert local.files == len(extra) + len(SAMPLE_FILES) and local.chunks > 40
    assert sum(_files_opened_by_workers(scheduler)) > 0  # the cluster did the work
    ia = Index(current_generation(tmp_path / "local"))
    ib = Index(current_generation(tmp_path / "dask"))
    for query in QUERIES:
        ra, rb = ia.search(query, k=10), ib.search(query, k=10)
        assert [r.id for r in ra] == [r.id for r in rb] and ra
        assert [r.score for r in ra] == [r.score for r in rb]


def segments(index_dir: Path) -> list[Path]:
    """The segments of the current generation, in the order the build wrote them."""
    generation = current_generation(index_dir)
    return [segment_dir(generation, e["name"]) for e in read_generation(generation)["segments"]]


def _files_opened_by_workers(address: str) -> list[int]:
    """Per worker, the repositories its build tasks opened (pipeline's per-process cache)."""
    from distributed import Client

    from indexer.index import pipeline

    with Client(address, timeout=30) as client:
        opened = client.run(lambda: pipeline._repository.cache_info().currsize)
    return list(opened.values())


def test_unreachable_scheduler_is_a_one_line_error(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo(SAMPLE_FILES)
    result = run_cli(
        "build", "--repo", str(repo), "--index-dir", str(tmp_path / "x"),
        "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.stderr
    assert not (tmp_path / "x" / "CURRENT").exists()
    missing = run_cli("build", "--repo", str(repo), "--backend", "dask")
    assert missing.returncode == 2 and "--backend dask needs --scheduler" in missing.stderr
