"""Garbage collection in a process that answers one read-only command (`indexer search`, `show`,
`related`): none while it runs, none over its objects at exit.

A cold search creates ~24k objects, most of them modules' (numpy's and ours) as they import:
the cyclic collector ran 46 times during those imports (4-5 ms) and, at interpreter shutdown,
traversed every object again (a process on the 163k-chunk corpus: 133.7 ms, 116.0 without
either; seventeenth pass, docs/benchmarks.md). One command's cyclic garbage is a few thousand
objects, freed with the process; only a process that starts with the command (cli.main before
numpy is imported) does this, not one that calls main() again and again. Objects are still
finalized by reference counting, and atexit handlers and stream flushes run as usual; what this
process writes (the savings log) is written with os.write, never left in a buffer.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

_FROZEN_AT_EXIT = False


@contextmanager
def no_collection() -> Iterator[None]:
    """No cyclic collection inside; then every object is frozen (gc.freeze: later collections,
    the shutdown's included, skip it) and the collector enabled again if it was. Objects made
    after are frozen at exit."""
    global _FROZEN_AT_EXIT
    if not _FROZEN_AT_EXIT:
        atexit.register(gc.freeze)  # runs before the interpreter's final collections
        _FROZEN_AT_EXIT = True
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Frozen first: enabled again, the collector would otherwise traverse everything
        # made since (all of it young, nothing having been collected) at the next allocation.
        gc.freeze()
        if enabled:
            gc.enable()
