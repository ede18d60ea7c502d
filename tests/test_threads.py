"""A search process runs its math libraries on one thread unless the environment says otherwise;
a query's background job (its dense search) runs on the process's one worker thread."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from indexer.threads import Job

PROBE = """
import json, numpy
from threadpoolctl import threadpool_info
from indexer.threads import single_threaded_math
before = {i["user_api"]: i["num_threads"] for i in threadpool_info()}
single_threaded_math()
import faiss  # loaded after: reads the environment the helper set
after = [(i["user_api"], i["num_threads"]) for i in threadpool_info()]
print(json.dumps({"before": before, "after": after}))
"""

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def probe(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_libraries_loaded_before_and_after_run_on_one_thread() -> None:
    result = probe()
    after = result["after"]
    assert isinstance(after, list) and after
    assert {api for api, _ in after} >= {"blas"}
    assert all(threads == 1 for _, threads in after), after


def test_an_explicit_environment_is_kept() -> None:
    result = probe(OPENBLAS_NUM_THREADS="2")
    after = result["after"]
    assert isinstance(after, list)
    assert any(api == "blas" and threads == 2 for api, threads in after), after


def test_a_job_runs_on_another_thread_and_returns_or_raises_there() -> None:
    main = threading.get_ident()
    jobs = [Job(lambda x: (x * 2, threading.get_ident()), i) for i in range(5)]
    results = [job.result() for job in jobs]
    assert [value for value, _ in results] == [0, 2, 4, 6, 8]
    assert {ident for _, ident in results} != {main}
    assert jobs[0].result()[0] == 0  # asked again: the same value

    def fails() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        Job(fails).result()
    assert Job(len, "after an error").result() == 14  # the worker goes on


def test_a_forked_child_runs_jobs_on_its_own_worker() -> None:
    assert Job(int, "1").result() == 1  # the parent's worker thread exists
    pid = os.fork()
    if pid == 0:  # the child: no worker thread unless a job starts one
        signal.alarm(30)  # a job that never runs must not hang the tests
        try:
            os._exit(0 if Job(int, "7").result() == 7 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
