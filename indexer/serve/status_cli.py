"""`indexer status`: what the index holds, how fresh it is, and the working-tree overlay."""

from __future__ import annotations

import argparse
from typing import Any

from ..terminal import clean
from .output import emit_json


def cmd_status(args: argparse.Namespace) -> int:
    from ..api import Index
    from ..errors import NoIndexError
    from ..fresh.freshness import last_failure
    from ..index.gitdir import index_dir_of

    index_dir = index_dir_of(args.repo, args.index_dir)
    try:
        index = Index.open(args.repo, index_dir=index_dir, watch=False)
    except NoIndexError as exc:
        failure = last_failure(index_dir)
        if failure:
            raise NoIndexError(f"{exc} (last update failed: {failure['error']})") from None
        raise
    status = index.status()  # the same keys as the API's Index.status()
    if args.json:
        emit_json(status)
        return 0
    fresh = status["freshness"]
    print(f"state      {fresh['state']} (HEAD {str(fresh['head'])[:12]})")
    if fresh["last_failure"]:
        failure = fresh["last_failure"]
        print(clean(f"last failure {failure.get('time')}: {failure.get('error')}"))
    counts = status["counts"]
    skipped = clean(", ".join(f"{k} {v}" for k, v in counts["skipped"].items()) or "none")
    print(f"commit     {clean(status['commit'])}")
    print(
        f"built      {status['created']} (tool {status['tool_version']}, "
        f"format {status['format_version']})"
    )
    print(f"files      {counts['files']}  chunks {counts['chunks']}")
    print(f"skipped    {skipped}")
    if counts.get("fallback"):  # indexed, but as text: its format did not parse
        print("as text    " + ", ".join(f"{k} {v}" for k, v in counts["fallback"].items()))
    redacted = ", ".join(f"{k} {v}" for k, v in counts.get("redacted", {}).items()) or "none"
    print(f"redacted   {redacted} (secret values replaced in indexed files)")
    for warning in status["warnings"]:
        print(f"WARNING    {clean(warning)}")
    langs = ", ".join(f"{k} {v}" for k, v in status["languages"].items())
    print(f"languages  {langs}")
    print(f"worktree   {clean(worktree_line(status['worktree']))}")
    print(
        f"artifacts  {clean(status['snapshot'])} ({status['artifact_bytes'] / 1e6:.1f} MB in "
        f"{status['segments']} segments)"
    )
    return 0


def worktree_line(worktree: dict[str, Any] | None) -> str:
    """`3 uncommitted files overlaid (2 modified, 1 added)`, or why there is no overlay."""
    if worktree is None:
        return "not overlaid (no working tree)"
    if worktree["unrelated"]:
        return f"not overlaid ({worktree['root']} is another repository's working tree)"
    n = worktree["overlaid"]
    states = ", ".join(f"{v} {k}" for k, v in worktree["states"].items())
    line = f"{n} uncommitted file{'s' if n != 1 else ''} overlaid" + (f" ({states})" if n else "")
    skipped = ", ".join(f"{k} {v}" for k, v in worktree["skipped"].items())
    if skipped:
        line += f"; skipped {skipped}"
    if worktree["merging"]:
        line += "; merge in progress (conflict markers are searched as they are)"
    return line
