"""One math-library thread for a search process.

A query's matrix products are small (a few hundred rows): OpenBLAS and OpenMP starting and
spinning a thread per core cost more than they save, and on a busy machine idle spinning
threads compete with the query itself (docs/benchmarks.md, "Cold processes" and "round 2").
What the environment says explicitly is kept.
"""

from __future__ import annotations

import os
import sys

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
