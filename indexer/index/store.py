"""Artifacts on disk: one directory per repository, immutable snapshots, an atomic CURRENT pointer.

Layout (default inside the repository's git directory, so nothing shows in `git status`):

    <git-dir>/indexer/
        CURRENT                 name of the live snapshot (replaced atomically)
        snapshots/<name>/       manifest.json + data files; never modified once published

A build writes a new snapshot into a temporary directory, fsyncs it, renames it into place and
then swaps CURRENT. A reader that opened the previous snapshot keeps reading it; it is deleted
only after a later build (the newest two are kept). Every file is JSON or .npy (loaded with
allow_pickle=False) or a FAISS index: loading never executes code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import CorruptIndexError, NoIndexError

FORMAT_VERSION = 2
# Files every snapshot of this format holds (the code graph's are optional extras).
REQUIRED_FILES = frozenset(
    {
        "chunks.jsonl",
        "chunk_offsets.npy",
        "texts.bin",
        "text_offsets.npy",
        "chunk_fids.npy",
        "chunk_file.npy",
        "chunk_flags.npy",
        "columns.json",
        "files.json",
        "skipped.json",
        "bm25_indptr.npy",
        "bm25_docs.npy",
        "bm25_scores.npy",
        "bm25_idf.npy",
        "bm25_tfs.npy",
        "bm25_doclen.npy",
        "bm25_vocab.json",
        "dense.faiss",
    }
)
MANIFEST = "manifest.json"
TMP_PREFIX = ".tmp-"
KEEP_SNAPSHOTS = 3  # an update publishes twice (see build.py); older readers keep theirs


def default_index_dir(git_dir: str | os.PathLike[str]) -> Path:
    override = os.environ.get("INDEXER_HOME")
    if override:
        return Path(override)
    return Path(git_dir) / "indexer"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
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


class SnapshotWriter:
    """Collects a new snapshot in a temporary directory; `publish` makes it current atomically."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        (index_dir / "snapshots").mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(index_dir / "snapshots")
        # The pid in the name tells a later run whether the writer is still alive.
        self.path = Path(
            tempfile.mkdtemp(dir=index_dir / "snapshots", prefix=f"{TMP_PREFIX}{os.getpid()}-")
        )

    def abort(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def link_from(self, snapshot: Path, files: dict[str, dict[str, Any]]) -> None:
        """Hard-link (or copy) another snapshot's files: snapshots are immutable, so sharing
        their inodes is safe and costs no disk."""
        for name in files:
            try:
                os.link(snapshot / name, self.path / name)
            except OSError:
                shutil.copy2(snapshot / name, self.path / name)

    def publish(
        self, manifest: dict[str, Any], known: dict[str, dict[str, Any]] | None = None
    ) -> Path:
        """Checksum, fsync and atomically make current. `known` holds checksums of files linked
        from a published snapshot (already synced and verified)."""
        files: dict[str, dict[str, Any]] = {}
        for item in sorted(self.path.iterdir()):
            info = (known or {}).get(item.name)
            if info is not None and info.get("bytes") == item.stat().st_size:
                files[item.name] = info
                continue
            with item.open("rb") as fh:
                os.fsync(fh.fileno())
            files[item.name] = {"bytes": item.stat().st_size, "sha256": sha256_file(item)}
        manifest = {
            "format_version": FORMAT_VERSION,
            "tool_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **manifest,
            "files": files,
        }
        (self.path / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _fsync_dir(self.path)
        name = f"{manifest.get('commit', 'none')[:12]}-{time.time_ns()}"
        final = self.index_dir / "snapshots" / name
        os.rename(self.path, final)
        _fsync_dir(final.parent)
        write_text_atomic(self.index_dir / "CURRENT", name + "\n")
        self._collect_garbage(keep=name)
        return final

    def _collect_garbage(self, keep: str) -> None:
        snapshots = self.index_dir / "snapshots"
        names = sorted(
            (p for p in snapshots.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        kept = 0
        for path in names:
            if path.name == keep or kept < KEEP_SNAPSHOTS:
                kept += 1
                continue
            shutil.rmtree(path, ignore_errors=True)
        remove_stale_temporaries(snapshots)


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
    removed = 0
    for path in directory.glob(TMP_PREFIX + "*"):
        if stale_temporary(path):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    return removed


def make_current(index_dir: Path, snapshot: Path) -> None:
    """Point CURRENT at an existing snapshot; touching it keeps it from garbage collection."""
    os.utime(snapshot)
    write_text_atomic(index_dir / "CURRENT", snapshot.name + "\n")


def snapshots_of(index_dir: Path, commit: str) -> list[Path]:
    """Published snapshots of `commit`, most recently used first."""
    directory = index_dir / "snapshots"
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        if path.name.startswith(".") or not path.name.startswith(commit[:12]):
            continue
        try:
            found.append((path.stat().st_mtime, path))
        except OSError:
            continue
    return [p for _, p in sorted(found, reverse=True)]


def current_snapshot(index_dir: Path) -> Path:
    pointer = index_dir / "CURRENT"
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise NoIndexError(f"no index at {index_dir}; run `indexer build` first") from None
    path = index_dir / "snapshots" / name
    if not name or "/" in name or not path.is_dir():
        raise CorruptIndexError(
            f"index pointer {pointer} names a missing snapshot; run `indexer build` to rebuild"
        )
    return path


def read_manifest(snapshot: Path, verify: bool = False) -> dict[str, Any]:
    rebuild = "run `indexer build` to rebuild"
    try:
        manifest: dict[str, Any] = json.loads((snapshot / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"unreadable index manifest in {snapshot}; {rebuild}") from exc
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        found = manifest.get("format_version") if isinstance(manifest, dict) else None
        raise CorruptIndexError(
            f"index format {found!r} in {snapshot} is not the supported format "
            f"{FORMAT_VERSION}; {rebuild}"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not set(files) >= REQUIRED_FILES:
        raise CorruptIndexError(f"index manifest in {snapshot} lacks required files; {rebuild}")
    for name, info in files.items():
        path = snapshot / name
        if "/" in name or not path.is_file() or path.stat().st_size != info.get("bytes"):
            raise CorruptIndexError(f"index file {name} is missing or truncated; {rebuild}")
        if verify and sha256_file(path) != info.get("sha256"):
            raise CorruptIndexError(f"index file {name} fails its checksum; {rebuild}")
    return manifest
