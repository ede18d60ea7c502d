"""Artifacts on disk: immutable segments, generation manifests, an atomic CURRENT pointer.

Layout (default inside the repository's git directory, so nothing shows in `git status`):

    <git-dir>/indexer/
        CURRENT                     name of the live generation (replaced atomically)
        generations/<name>.json     one manifest per generation: the live segments, each with
                                    the paths it no longer serves; never modified
        segments/<name>/            a segment's files (indexer/index/segment_format.py);
                                    never modified

A writer fills a segment in a temporary directory, fsyncs it and renames it into place, then
writes the generation manifest (temporary file, fsync, rename) and only then swaps CURRENT:
killed at any point, the previous generation stays live and complete. A reader holds the
generation it opened; the newest KEEP_GENERATIONS generations and every segment they use are
kept (switching back to a recently indexed commit only moves CURRENT), the rest is removed.
Renaming segments into place, publishing and collecting garbage happen under `publish_lock`
(`<index>/publish.lock`), held for milliseconds: garbage collection never sees a segment that
is in place but not yet listed by a generation, and a merge that ran without any lock can
check that the generation it merged is still current before it publishes (merge.py).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import CorruptIndexError, NoIndexError

FORMAT_VERSION = 3
GENERATIONS = "generations"
SEGMENTS = "segments"
TMP_PREFIX = ".tmp-"
KEEP_GENERATIONS = 4  # open readers and `switch back` use recent ones
PUBLISH_LOCK = "publish.lock"
REBUILD = "run `indexer build` to rebuild"


def default_index_dir(git_dir: str | os.PathLike[str]) -> Path:
    override = os.environ.get("INDEXER_HOME")
    if override:
        return Path(override)
    return Path(git_dir) / "indexer"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_files(paths: Sequence[Path]) -> None:
    """fsync every file, concurrently: the filesystem then commits them in one or two journal
    flushes instead of one each (a segment's ~36 files: ~10 ms instead of ~120 ms)."""

    def sync(path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    if len(paths) <= 1:
        for path in paths:
            sync(path)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(16, len(paths))) as pool:
        list(pool.map(sync, paths))  # list(): re-raises the first error


def write_text_atomic(path: Path, text: str) -> None:
    import tempfile  # writers only: a search never imports it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TMP_PREFIX}{os.getpid()}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def new_name(commit: str) -> str:
    return f"{commit[:12]}-{time.time_ns()}"


class SegmentWriter:
    """A segment being written: a temporary directory until `finish` renames it into place."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        directory = index_dir / SEGMENTS
        directory.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(directory)
        import tempfile

        # The pid in the name tells a later run whether the writer is still alive.
        self.path = Path(tempfile.mkdtemp(dir=directory, prefix=f"{TMP_PREFIX}{os.getpid()}-"))

    def abort(self) -> None:
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)

    def finish(self, name: str) -> Path:
        _fsync_dir(self.path)
        final = self.index_dir / SEGMENTS / name
        os.rename(self.path, final)
        _fsync_dir(final.parent)
        return final


_HELD: dict[str, list[int]] = {}  # index dir -> [lock fd, depth] held by this process


@contextmanager
def publish_lock(index_dir: Path) -> Iterator[None]:
    """Hold `<index>/publish.lock` (waiting for it): around renaming segments into place and
    publishing. Re-entrant within a process."""
    key = os.path.realpath(index_dir)
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    import fcntl

    index_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(index_dir / PUBLISH_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD[key] = [fd, 1]
        try:
            yield
        finally:
            del _HELD[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def publish_generation(index_dir: Path, manifest: dict[str, Any]) -> Path:
    """Write a generation manifest and make it current (atomically); collect garbage."""
    manifest = {
        "format_version": FORMAT_VERSION,
        "tool_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **manifest,
    }
    name = new_name(str(manifest.get("commit", "none")))
    path = index_dir / GENERATIONS / f"{name}.json"
    # Compact JSON: the C encoder (an indented dump of the big corpus's 150 KB takes 10 ms).
    text = json.dumps(manifest, separators=(",", ":"))
    with publish_lock(index_dir):
        write_text_atomic(path, text)
        write_text_atomic(index_dir / "CURRENT", name + "\n")
        _remember(path, manifest)
        collect_garbage(index_dir)
    return path


_SEGMENTS_OF: dict[Path, tuple[int, int, list[str]]] = {}  # generation -> (mtime, size, names)


def _remember(path: Path, manifest: dict[str, Any]) -> None:
    """Note the segments of a generation this process read or wrote: garbage collection then
    parses only the other kept generations."""
    try:
        st = path.stat()
    except OSError:
        return
    names = [s["name"] for s in manifest.get("segments", []) if isinstance(s, dict)]
    _SEGMENTS_OF[path] = (st.st_mtime_ns, st.st_size, names)


def _segments_of(path: Path) -> list[str]:
    """The segment names a generation lists."""
    st = path.stat()
    known = _SEGMENTS_OF.get(path)
    if known is not None and known[:2] == (st.st_mtime_ns, st.st_size):
        return known[2]
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return [s["name"] for s in manifest.get("segments", [])]


def generation_paths(index_dir: Path) -> list[Path]:
    """Published generations, most recently used first."""
    directory = index_dir / GENERATIONS
    if not directory.is_dir():
        return []
    found = []
    for path in directory.glob("*.json"):
        if path.name.startswith("."):
            continue
        try:
            found.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:
            continue
    return [p for _, _, p in sorted(found, reverse=True)]


def collect_garbage(index_dir: Path) -> None:
    """Keep the current and the newest generations and the segments they use."""
    import shutil

    try:
        current: Path | None = current_generation(index_dir)
    except (NoIndexError, CorruptIndexError):
        current = None
    kept, used = 0, set[str]()
    for path in generation_paths(index_dir):
        if path != current and kept >= KEEP_GENERATIONS:
            path.unlink(missing_ok=True)
            continue
        kept += 1
        try:
            used.update(_segments_of(path))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    segments = index_dir / SEGMENTS
    if segments.is_dir():
        for path in segments.iterdir():
            if not path.name.startswith(".") and path.name not in used:
                shutil.rmtree(path, ignore_errors=True)
        remove_stale_temporaries(segments)
    remove_stale_temporaries(index_dir / GENERATIONS)
    for old in ("snapshots", "blobcache"):  # format 2 leftovers
        shutil.rmtree(index_dir / old, ignore_errors=True)


def stale_temporary(path: Path) -> bool:
    """A `.tmp-<pid>-*` entry whose writer is dead (or an old-style one over an hour old)."""
    from .workers import pid_alive

    pid = path.name[len(TMP_PREFIX) :].split("-", 1)[0]
    if pid.isdigit():
        return int(pid) != os.getpid() and not pid_alive(int(pid))
    try:
        return time.time() - path.lstat().st_mtime > 3600
    except OSError:
        return False


def remove_stale_temporaries(directory: Path) -> int:
    """Remove what killed builds and updates left in `directory`; never a live writer's."""
    import shutil

    removed = 0
    if not directory.is_dir():
        return 0
    for path in directory.glob(TMP_PREFIX + "*"):
        if stale_temporary(path):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    return removed


def make_current(index_dir: Path, generation: Path) -> None:
    """Point CURRENT at an existing generation; touching it keeps it from garbage collection."""
    with publish_lock(index_dir):
        os.utime(generation)
        write_text_atomic(index_dir / "CURRENT", generation.stem + "\n")


def generations_of(index_dir: Path, commit: str) -> list[Path]:
    """Published generations of `commit`, most recently used first."""
    return [p for p in generation_paths(index_dir) if p.name.startswith(commit[:12])]


def current_generation(index_dir: Path) -> Path:
    pointer = index_dir / "CURRENT"
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise NoIndexError(f"no index at {index_dir}; run `indexer build` first") from None
    path = index_dir / GENERATIONS / f"{name}.json"
    if not name or "/" in name or not path.is_file():
        if (index_dir / "snapshots" / name).is_dir():
            raise CorruptIndexError(
                f"the index at {index_dir} has an older format (snapshots); {REBUILD}"
            )
        raise CorruptIndexError(f"index pointer {pointer} names a missing generation; {REBUILD}")
    return path


current_snapshot = current_generation  # the name callers used before segments


def read_generation(path: Path) -> dict[str, Any]:
    """A generation manifest, checked for format and for segments that exist."""
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"unreadable index manifest {path}; {REBUILD}") from exc
    if isinstance(manifest, dict) and isinstance(manifest.get("segments"), list):
        _remember(path, manifest)
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        found = manifest.get("format_version") if isinstance(manifest, dict) else None
        raise CorruptIndexError(
            f"index format {found!r} in {path} is not the supported format "
            f"{FORMAT_VERSION}; {REBUILD}"
        )
    segments = manifest.get("segments")
    if not isinstance(segments, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) and "/" not in s["name"]
        for s in segments
    ):
        raise CorruptIndexError(f"index manifest {path} lists no valid segments; {REBUILD}")
    for s in segments:
        if not (path.parent.parent / SEGMENTS / s["name"]).is_dir():
            raise CorruptIndexError(f"segment {s['name']} of the index is missing; {REBUILD}")
    return manifest


def segment_dir(generation: Path, name: str) -> Path:
    return generation.parent.parent / SEGMENTS / name
