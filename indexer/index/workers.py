"""Worker processes that never outlive the command that started them.

joblib's loky workers idle for up to 5 minutes after their last task and, when the parent is
killed (`kill -9`, an OOM kill), are re-parented to init and linger with their resource
trackers (40-60 MB each). Every pool the indexer starts runs `watch_parent` in each worker:
a daemon thread that exits the worker as soon as its parent process is gone. Loky's resource
tracker exits by itself once no process holds its pipe, that is once the workers are gone.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

POLL_SECONDS = 0.5


def watch_parent(parent_pid: int) -> None:
    """Worker initializer: exit when `parent_pid` is no longer this process's parent."""

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
