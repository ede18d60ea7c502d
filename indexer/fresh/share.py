"""Share artifacts through git: publish a generation as a commit on a ref, pull it back.

`publish` writes a commit on `refs/indexer/<branch>` whose parent is the previous publish, so
plain fetches fast-forward; its tree is `manifest.json` (the generation, with every segment
file's size and sha256) and `segments/<name>/<file>`: segments are immutable, so a publish after
a small commit adds only the new segment's blobs and trees (git stores the others once).
Publishing an index identical to the last one is a no-op. The work tree, the git index and
HEAD are never touched. `pull [--remote R]` fetches the published refs itself, adopts the best
one for HEAD (indexed commit HEAD, an ancestor, a descendant or another branch: the incremental
update diffs trees) and brings it to HEAD.
Fetched artifacts are data only: every file is checked against the manifest's size and
sha256, only known file names are accepted, and nothing in them is executable.
As the ref's pusher can fix those checksums too, every chunk is then checked against the git
blob it came from (indexer/fresh/provenance.py) before anything is written: the indexed
commit must be in the clone (`pull --remote` fetches it when it is not).
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

from ..errors import IndexerError
from ..index.reader import open_generation
from ..index.store import (
    FORMAT_VERSION,
    SEGMENTS,
    SegmentWriter,
    current_generation,
    default_index_dir,
    publish_generation,
    publish_lock,
)
from ..index.vectors import StaticVectors, default_table_dir
from ..source.gitsource import open_repository
from . import published_refs

REF_PREFIX = published_refs.REF_PREFIX
MANIFEST = "manifest.json"
# Every file a segment may hold, and segment names: anything else in a fetched tree is rejected.
ALLOWED_FILES = re.compile(r"^[a-z0-9_]+\.(json|jsonl|npy|bin|txt|json\.gz)$")
SEGMENT_NAME = re.compile(r"^[0-9a-z]{1,40}-[0-9]{1,24}$")


def default_ref(repo: pygit2.Repository) -> str:
    """refs/indexer/<branch>. A detached HEAD (as many CI systems check out) takes the name of
    a branch whose tip it is, the default branch first; else `detached`."""
    if repo.head_is_unborn:
        return REF_PREFIX + "detached"
    if not repo.head_is_detached:
        return REF_PREFIX + repo.head.shorthand
    names = published_refs.branches_at(repo, repo.head.target)
    default = published_refs.default_branch(repo, None)
    if default in names:
        return REF_PREFIX + default
    return REF_PREFIX + (names[0] if names else "detached")


def _full_ref(name: str | None, repo: pygit2.Repository) -> str:
    if not name:
        return default_ref(repo)
    ref = name if name.startswith("refs/") else REF_PREFIX + name
    if not pygit2.reference_is_valid_name(ref):
        raise IndexerError(f"invalid ref name: {name}")
    return ref


def publish(
    repo_path: str | None,
    index_dir: str | os.PathLike[str] | None = None,
    ref: str | None = None,
    chain: bool = True,
) -> dict[str, Any]:
    """Commit the current snapshot on `ref`; a no-op (`changed: False`) when the index there
    is already this one. With `chain` the commit's parent is the previous publish."""
    repo = open_repository(repo_path)
    directory = Path(index_dir) if index_dir else default_index_dir(repo.path)
    manifest = _published_manifest(directory)
    full_ref = _full_ref(ref, repo)
    previous = _ref_commit(repo, full_ref)
    result = {
        "ref": full_ref,
        "indexed_commit": manifest["commit"],
        "files": len(manifest["files"]) + 1,
    }
    by_segment: dict[str, Any] = {}
    for key in manifest["files"]:
        name, file_name = key.split("/", 1)
        by_segment.setdefault(name, repo.TreeBuilder()).insert(
            file_name,
            repo.create_blob_fromdisk(str(directory / SEGMENTS / key)),
            pygit2.enums.FileMode.BLOB,
        )
    segments = repo.TreeBuilder()
    for name, builder in sorted(by_segment.items()):
        segments.insert(name, builder.write(), pygit2.enums.FileMode.TREE)
    root = repo.TreeBuilder()
    text = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
    root.insert(MANIFEST, repo.create_blob(text), pygit2.enums.FileMode.BLOB)
    root.insert(SEGMENTS, segments.write(), pygit2.enums.FileMode.TREE)
    tree = root.write()
    if previous is not None and _same_index(repo, previous, tree, manifest):
        return {**result, "commit": str(previous.id), "changed": False}
    signature = pygit2.Signature("indexer", "indexer@localhost", int(time.time()), 0)
    message = (
        f"indexer artifacts for {manifest['commit']}\n\n"
        f"indexed-commit: {manifest['commit']}\nformat: {manifest['format_version']}\n"
    )
    parents = [previous.id] if chain and previous is not None else []
    commit = repo.create_commit(None, signature, signature, message, tree, parents)
    repo.references.create(full_ref, commit, force=True)
    return {**result, "commit": str(commit), "changed": True}


def _ref_commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit | None:
    try:
        return repo.references[ref].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError, ValueError):
        return None


def _same_index(
    repo: pygit2.Repository, previous: pygit2.Commit, tree: pygit2.Oid, manifest: dict[str, Any]
) -> bool:
    """The same indexed commit and byte-identical artifacts (only build times may differ)."""
    old = published_refs.manifest_of(repo, previous)
    if old is None or old.get("commit") != manifest["commit"]:
        return False
    if old.get("format_version") != manifest["format_version"]:
        return False
    new_tree: Any = repo[tree]

    def artifacts(t: Any) -> dict[str, str]:
        return {e.name: str(e.id) for e in t if e.name != MANIFEST}

    return artifacts(previous.tree) == artifacts(new_tree)


def _published_manifest(directory: Path) -> dict[str, Any]:
    """The current generation, fully verified, with `files` listing every segment file
    (segment.json included) by `segment/file`, and no machine-local fields."""
    manifest, parts = open_generation(current_generation(directory), verify=True)
    files = dict(manifest["files"])
    for segment, _ in parts:
        assert segment.directory is not None
        path = segment.directory / "segment.json"
        files[f"{segment.name}/segment.json"] = {
            "bytes": path.stat().st_size,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        }
    local = ("repo_root", "pulled_from", "created", "tool_version")
    published = {k: v for k, v in manifest.items() if k not in local}
    published["vectors"] = {k: v for k, v in manifest["vectors"].items() if k != "dir"}
    published["files"] = files
    return published


def _checksums(manifest: dict[str, Any]) -> dict[str, Any]:
    files = manifest.get("files")
    return {n: i.get("sha256") for n, i in files.items()} if isinstance(files, dict) else {}


class NoPublishedIndex(IndexerError):
    """Nothing published to adopt (CI's first run starts from a full build)."""


def pull(
    repo_path: str | None,
    index_dir: str | os.PathLike[str] | None = None,
    ref: str | None = None,
    remote: str | None = None,
) -> dict[str, Any]:
    """Fetch the published indexes from `remote` (when given), adopt the best one for HEAD
    (verified) and update it to HEAD. `ref` names one published index and nothing else."""
    from ..index.build import update_index

    repo = open_repository(repo_path)
    if repo.head_is_unborn:
        raise IndexerError("the repository has no commits yet")
    directory = Path(index_dir) if index_dir else default_index_dir(repo.path)
    if remote:
        published_refs.fetch(repo, remote)
    if ref:
        full_ref = _full_ref(ref, repo)
        if _ref_commit(repo, full_ref) is None:
            raise NoPublishedIndex(f"no published index at {full_ref}{_how_to_fetch(remote)}")
    else:
        own = default_ref(repo)  # a detached HEAD: the branch whose tip it is, if any
        chosen = published_refs.choose(repo, own, remote)
        if chosen is None:
            raise NoPublishedIndex(f"no published index in this clone{_how_to_fetch(remote)}")
        full_ref = chosen.ref
    published = repo.references[full_ref].peel(pygit2.Commit)
    files = _verified_files(repo, published.tree, full_ref)
    manifest = json.loads(files[MANIFEST])
    indexed = manifest["commit"]
    head = str(repo.head.target)
    result: dict[str, Any] = {
        "ref": full_ref,
        "indexed_commit": indexed,
        "head": head,
        "updated": False,
        "adopted": False,
    }
    local = _local_manifest(directory)
    if local is not None and local.get("commit") == head:
        return result  # the local index already is for HEAD: nothing to gain
    if indexed not in repo and remote:
        published_refs.fetch_commit(repo, remote, indexed)  # a clone behind the published commit
    if indexed not in repo:
        raise IndexerError(
            f"the published index is for commit {indexed[:12]}, which this "
            "clone does not have; fetch it first (or pull with --remote)"
        )
    _check_content(repo, files, manifest, full_ref)
    table = StaticVectors.load()
    if manifest.get("vectors", {}).get("card") != table.card:
        raise IndexerError(
            "the published index was built with another static vector table; run `indexer build`"
        )
    if local is None or _checksums(local) != _checksums(manifest):
        _adopt(repo, directory, files, manifest, full_ref, str(published.id))
        result["adopted"] = True
    if indexed != head:
        report = update_index(repo_path, index_dir=directory, progress=False)
        result.update(
            updated=True, update_seconds=report.seconds, chunked_files=report.chunked_files
        )
    return result


def _how_to_fetch(remote: str | None) -> str:
    if remote:
        return f" (nothing on {remote} under {REF_PREFIX}; run `indexer ci` there first)"
    return "; fetch it with `indexer pull --remote origin` or run `indexer publish`"


def _local_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        return _published_manifest(directory)
    except IndexerError:
        return None


def _adopt(
    repo: pygit2.Repository,
    directory: Path,
    files: dict[str, bytes],
    manifest: dict[str, Any],
    ref: str,
    commit: str,
) -> None:
    names = {key.split("/", 1)[0] for key in files if key != MANIFEST}
    written: list[tuple[SegmentWriter, str]] = []
    try:
        for name in sorted(names):
            existing = directory / SEGMENTS / name
            mine = {k.split("/", 1)[1]: v for k, v in files.items() if k.startswith(name + "/")}
            if existing.is_dir():
                if (existing / "segment.json").read_bytes() == mine["segment.json"]:
                    continue  # segments are immutable: already here
                message = f"a different local segment is named {name}; run `indexer build`"
                raise IndexerError(message)
            writer = SegmentWriter(directory)
            written.append((writer, name))
            for file_name, data in mine.items():
                (writer.path / file_name).write_bytes(data)
        dropped = ("files", "format_version", "tool_version", "created")
        local = {k: v for k, v in manifest.items() if k not in dropped}
        local["repo_root"] = str(Path(repo.workdir or repo.path))
        local["vectors"] = {**manifest["vectors"], "dir": str(default_table_dir())}
        local["pulled_from"] = {"ref": ref, "commit": commit}
        # Renamed into place and published under the publish lock: garbage collection by
        # another writer never sees them unlisted (indexer/index/store.py).
        with publish_lock(directory):
            while written:
                written[0][0].finish(written[0][1])
                written.pop(0)
            publish_generation(directory, local)
    except BaseException:
        for writer, _ in written:
            writer.abort()
        raise


def _verified_files(repo: pygit2.Repository, tree: pygit2.Tree, ref: str) -> dict[str, bytes]:
    """The published files, each checked against the manifest; a clear error otherwise."""
    reject = f"rejected the index published at {ref}"
    files: dict[str, bytes] = {}

    def blob_of(entry: Any, name: str) -> bytes:
        if entry.type_str != "blob" or entry.filemode != pygit2.enums.FileMode.BLOB:
            raise IndexerError(f"{reject}: {name!r} is not a regular file")
        return bytes(repo[entry.id].data)  # type: ignore[attr-defined]

    for entry in tree:
        name = entry.name or ""
        if name == MANIFEST:
            files[name] = blob_of(entry, name)
        elif name == SEGMENTS and entry.type_str == "tree":
            for segment in repo[entry.id]:  # type: ignore[attr-defined]
                if segment.type_str != "tree" or not SEGMENT_NAME.match(segment.name or ""):
                    raise IndexerError(f"{reject}: unexpected segment {segment.name!r}")
                for item in repo[segment.id]:  # type: ignore[attr-defined]
                    key = f"{segment.name}/{item.name}"
                    if not ALLOWED_FILES.match(item.name or ""):
                        raise IndexerError(f"{reject}: unexpected file {key!r}")
                    files[key] = blob_of(item, key)
        else:
            raise IndexerError(f"{reject}: unexpected file {name!r}")
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
    segments = manifest.get("segments")
    stored = {key.split("/", 1)[0] for key in listed}
    if not isinstance(segments, list) or stored != {
        s.get("name") for s in segments if isinstance(s, dict)
    }:
        raise IndexerError(f"{reject}: segments do not match the manifest")
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
    from ..source.chunker import CHUNKER_VERSION
    from .provenance import ProvenanceError, check_provenance

    reject = f"rejected the index published at {ref}"
    if manifest.get("chunker_version") != CHUNKER_VERSION:
        raise IndexerError(
            f"{reject}: it was made by chunker version {manifest.get('chunker_version')!r}, "
            f"not {CHUNKER_VERSION}; publish it again with this version or run `indexer build`"
        )
    try:
        check_provenance(files.__getitem__, manifest, repo, manifest["commit"])
    except ProvenanceError as exc:
        raise IndexerError(f"{reject}: {exc} (forged or damaged; nothing was adopted)") from None


def ci(
    repo_path: str | None,
    index_dir: str | os.PathLike[str] | None = None,
    ref: str | None = None,
    remote: str | None = None,
    push: bool = False,
) -> dict[str, Any]:
    """What a CI job runs: start from the published index (with `remote`), update (or build)
    the index at HEAD, publish it, and push it when it changed (with `push`)."""
    from ..index.build import update_index

    if push and not remote:
        raise IndexerError("--push needs --remote (where to push the published index)")
    started_from = None
    if remote:
        try:
            started_from = pull(repo_path, index_dir, ref, remote)["ref"]
        except NoPublishedIndex:
            started_from = None  # the first run: a full build
    report = update_index(repo_path, index_dir=index_dir, progress=False)
    published = publish(repo_path, index_dir, ref)
    pushed = False
    if push and remote and published["changed"]:
        published_refs.push(open_repository(repo_path), remote, published["ref"])
        pushed = True
    return {
        "build": report.to_dict(),
        "publish": published,
        "started_from": started_from,
        "pushed": pushed,
    }
