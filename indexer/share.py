"""Share artifacts through git: publish a snapshot as a commit on a dedicated ref, pull it back.

`publish` writes blobs, a tree and a parentless commit on `refs/indexer/<branch>`: the work
tree, the git index and HEAD are never touched, and the ref's history does not grow. `pull`
adopts a published snapshot whose commit is HEAD, or an ancestor of HEAD (then updates
incrementally). Fetched artifacts are data only: every file is checked against the manifest's
size and sha256, only known file names are accepted, and nothing in them is executable. As the
ref's pusher can fix those checksums too, every chunk is then checked against the git blob it
came from (indexer/provenance.py) before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pygit2

from .errors import IndexerError
from .gitsource import open_repository
from .store import (
    FORMAT_VERSION,
    MANIFEST,
    SnapshotWriter,
    current_snapshot,
    default_index_dir,
    read_manifest,
)
from .vectors import StaticVectors, default_table_dir

REF_PREFIX = "refs/indexer/"
# Every file a snapshot may hold: anything else in a fetched tree is rejected.
ALLOWED_FILES = re.compile(r"^(manifest\.json|[a-z0-9_]+\.(json|jsonl|npy|bin|faiss))$")


def default_ref(repo: pygit2.Repository) -> str:
    if repo.head_is_detached or repo.head_is_unborn:
        return REF_PREFIX + "detached"
    return REF_PREFIX + repo.head.shorthand


def _full_ref(name: str | None, repo: pygit2.Repository) -> str:
    if not name:
        return default_ref(repo)
    ref = name if name.startswith("refs/") else REF_PREFIX + name
    if not pygit2.reference_is_valid_name(ref):
        raise IndexerError(f"invalid ref name: {name}")
    return ref


def publish(
    repo_path: str | None, index_dir: str | os.PathLike[str] | None = None, ref: str | None = None
) -> dict[str, Any]:
    repo = open_repository(repo_path)
    directory = Path(index_dir) if index_dir else default_index_dir(repo.path)
    snapshot = current_snapshot(directory)
    manifest = read_manifest(snapshot, verify=True)
    builder = repo.TreeBuilder()
    for path in sorted(snapshot.iterdir()):
        if path.is_file() and ALLOWED_FILES.match(path.name):
            builder.insert(
                path.name, repo.create_blob_fromdisk(str(path)), pygit2.enums.FileMode.BLOB
            )
    tree = builder.write()
    signature = pygit2.Signature("indexer", "indexer@localhost", int(time.time()), 0)
    full_ref = _full_ref(ref, repo)
    message = (
        f"indexer artifacts for {manifest['commit']}\n\n"
        f"indexed-commit: {manifest['commit']}\nformat: {manifest['format_version']}\n"
    )
    commit = repo.create_commit(None, signature, signature, message, tree, [])
    repo.references.create(full_ref, commit, force=True)
    return {
        "ref": full_ref,
        "commit": str(commit),
        "indexed_commit": manifest["commit"],
        "files": len(manifest["files"]) + 1,
    }


def pull(
    repo_path: str | None, index_dir: str | os.PathLike[str] | None = None, ref: str | None = None
) -> dict[str, Any]:
    """Adopt the snapshot published on `ref` (verified), then update it to HEAD if behind."""
    from .build import update_index

    repo = open_repository(repo_path)
    directory = Path(index_dir) if index_dir else default_index_dir(repo.path)
    full_ref = _full_ref(ref, repo)
    try:
        published = repo.references[full_ref].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError, ValueError):
        raise IndexerError(
            f"no published index at {full_ref}; fetch it with "
            f"`git fetch origin '{REF_PREFIX}*:{REF_PREFIX}*'` or run `indexer publish`"
        ) from None
    files = _verified_files(repo, published.tree, full_ref)
    manifest = json.loads(files[MANIFEST])
    indexed = manifest["commit"]
    if repo.head_is_unborn:
        raise IndexerError("the repository has no commits yet")
    head = str(repo.head.target)
    if indexed not in repo:
        raise IndexerError(
            f"the published index is for commit {indexed[:12]}, which this "
            "clone does not have; fetch it first"
        )
    if indexed != head and not repo.descendant_of(head, indexed):
        raise IndexerError(
            f"the published index is for {indexed[:12]}, not HEAD or an ancestor "
            "of it; run `indexer build`"
        )
    _check_content(repo, files, manifest, full_ref)
    table = StaticVectors.load()
    if manifest.get("vectors", {}).get("card") != table.card:
        raise IndexerError(
            "the published index was built with another static vector table; run `indexer build`"
        )

    writer = SnapshotWriter(directory)
    try:
        for name, data in files.items():
            if name != MANIFEST:
                (writer.path / name).write_bytes(data)
        local = {
            k: v
            for k, v in manifest.items()
            if k not in ("files", "format_version", "tool_version", "created")
        }
        local["repo_root"] = str(Path(repo.workdir or repo.path))
        local["vectors"] = {**manifest["vectors"], "dir": str(default_table_dir())}
        local["pulled_from"] = {"ref": full_ref, "commit": str(published.id)}
        writer.publish(local)
    except BaseException:
        writer.abort()
        raise
    result: dict[str, Any] = {
        "ref": full_ref,
        "indexed_commit": indexed,
        "head": head,
        "updated": False,
    }
    if indexed != head:
        report = update_index(repo_path, index_dir=directory, progress=False)
        result.update(
            updated=True, update_seconds=report.seconds, chunked_files=report.chunked_files
        )
    return result


def _verified_files(repo: pygit2.Repository, tree: pygit2.Tree, ref: str) -> dict[str, bytes]:
    """The published files, each checked against the manifest; a clear error otherwise."""
    reject = f"rejected the index published at {ref}"
    files: dict[str, bytes] = {}
    for entry in tree:
        name = entry.name or ""
        if entry.type_str != "blob" or entry.filemode != pygit2.enums.FileMode.BLOB:
            raise IndexerError(f"{reject}: {name!r} is not a regular file")
        if not ALLOWED_FILES.match(name):
            raise IndexerError(f"{reject}: unexpected file {name!r}")
        blob: Any = repo[entry.id]
        files[name] = bytes(blob.data)
    if MANIFEST not in files:
        raise IndexerError(f"{reject}: no manifest.json")
    try:
        manifest = json.loads(files[MANIFEST])
    except ValueError:
        raise IndexerError(f"{reject}: manifest.json is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        raise IndexerError(
            f"{reject}: index format {manifest.get('format_version')!r} is not "
            f"{FORMAT_VERSION}; run `indexer build`"
        )
    listed = manifest.get("files")
    if not isinstance(listed, dict) or not isinstance(manifest.get("commit"), str):
        raise IndexerError(f"{reject}: the manifest is incomplete")
    if set(listed) != set(files) - {MANIFEST}:
        raise IndexerError(f"{reject}: files do not match the manifest")
    for name, info in listed.items():
        data = files[name]
        if len(data) != info.get("bytes") or hashlib.sha256(data).hexdigest() != info.get("sha256"):
            raise IndexerError(f"{reject}: {name} does not match its checksum (tampered?)")
    return files


def _check_content(
    repo: pygit2.Repository, files: dict[str, bytes], manifest: dict[str, Any], ref: str
) -> None:
    """Checksums only prove the files match their own manifest: anyone who can push the ref
    can fix both. Every chunk is verified against the git blob it came from (provenance.py)."""
    from .chunker import CHUNKER_VERSION
    from .provenance import ProvenanceError, check_provenance

    reject = f"rejected the index published at {ref}"
    if manifest.get("chunker_version") != CHUNKER_VERSION:
        raise IndexerError(
            f"{reject}: it was made by chunker version {manifest.get('chunker_version')!r}, "
            f"not {CHUNKER_VERSION}; publish it again with this version or run `indexer build`"
        )
    try:
        check_provenance(files.__getitem__, set(files), repo, manifest["commit"])
    except ProvenanceError as exc:
        raise IndexerError(f"{reject}: {exc} (forged or damaged; nothing was adopted)") from None


def ci(
    repo_path: str | None, index_dir: str | os.PathLike[str] | None = None, ref: str | None = None
) -> dict[str, Any]:
    """What a CI job runs: update (or build) the index at HEAD, then publish it."""
    from .build import update_index

    report = update_index(repo_path, index_dir=index_dir, progress=False)
    published = publish(repo_path, index_dir, ref)
    return {"build": report.to_dict(), "publish": published}
