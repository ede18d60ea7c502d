"""A search process runs its math libraries on one thread unless the environment says otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
