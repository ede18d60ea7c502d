"""Install and uninstall the git hooks that keep the index fresh.

Existing hooks are chained, not overwritten: a user's hook is renamed to
`<hook>.indexer-chained` and run first by ours; uninstall renames it back, byte for byte. A
chained hook that nothing runs any more (the user replaced ours) is kept as
`<hook>.indexer-set-aside`. `core.hooksPath` is respected, except when it points at a folder
tracked by git: then install refuses rather than change shared, committed hooks.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import IndexerError
from ..source.gitsource import open_repository

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "indexer-hook: keeps the code index fresh"
CHAINED = ".indexer-chained"
ORPHANED = ".indexer-set-aside"


def hook_template() -> str:
    here = Path(__file__).resolve().parents[1]  # the indexer package
    for candidate in (here.parent / "hooks" / "indexer-hook.sh", here / "data" / "indexer-hook.sh"):
        if candidate.exists():
            return candidate.read_text(encoding="utf-8")
    raise IndexerError("hook template hooks/indexer-hook.sh is missing from the installation")


def hooks_dir(repo_path: str | None) -> Path:
    repo = open_repository(repo_path)
    try:
        configured = repo.config["core.hooksPath"]
    except KeyError:
        configured = None
    if configured:
        path = Path(os.path.expanduser(configured))
        if not path.is_absolute():
            base = Path(repo.workdir) if repo.workdir else Path(repo.path)
            path = base / path
        return path
    return Path(repo.path) / "hooks"


@dataclass
class HookChange:
    hook: str
    action: str  # installed | updated | chained | removed | restored | absent

    def to_dict(self) -> dict[str, str]:
        return {"hook": self.hook, "action": self.action}


def _is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def hook_script() -> str:
    """The template with this interpreter and the failure messages it records filled in."""
    python = sys.executable
    gone = (
        f"the hook's Python {python} is gone (moved or deleted virtualenv?), so updates "
        "stopped; run `indexer hooks install` again from the environment indexer is in"
    )
    broken = (
        f"the hook could not run `{python} -m indexer update` (is indexer still installed "
        "there?); run `indexer hooks install` again"
    )
    return (
        hook_template()
        .replace("__PYTHON__", shlex.quote(python))
        .replace("__NO_PYTHON__", shlex.quote(json.dumps(gone)))
        .replace("__NO_MODULE__", shlex.quote(json.dumps(broken)))
    )


def refuse_tracked_hooks_dir(repo_path: str | None, directory: Path) -> None:
    """core.hooksPath may point at a folder committed to the repository (shared hooks).
    Installing there would rewrite tracked files and add ones holding this machine's Python
    path, which the next `git commit -a` or `git add -A` would share with everyone."""
    repo = open_repository(repo_path)
    if not repo.workdir:
        return
    try:
        rel = directory.resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
    except ValueError:
        return  # outside the work tree
    prefix = "" if rel == "." else rel + "/"
    tracked = sum(1 for entry in repo.index if entry.path.startswith(prefix))
    if tracked:
        raise IndexerError(
            f"core.hooksPath points at {rel}/, a folder tracked by git ({tracked} tracked "
            "files); installing would change your shared hooks and add this machine's Python "
            "path to them. Call `indexer update --background` from those hooks instead, or use "
            "the pre-commit framework entry (see docs/freshness.md)"
        )


def _set_aside(chained: Path) -> Path:
    """A chained hook no installed hook runs any more (the user replaced ours): keep its
    bytes under a free name instead of failing or overwriting it."""
    for n in range(1000):
        target = chained.with_name(chained.name.replace(CHAINED, ORPHANED) + (f".{n}" if n else ""))
        if not (target.exists() or target.is_symlink()):
            os.rename(chained, target)
            return target
    raise IndexerError(f"{chained} is in the way; move it away and try again")


def install(repo_path: str | None) -> list[HookChange]:
    directory = hooks_dir(repo_path)
    refuse_tracked_hooks_dir(repo_path, directory)
    directory.mkdir(parents=True, exist_ok=True)
    script = hook_script()
    changes = []
    for hook in HOOKS:
        path = directory / hook
        action = "installed"
        if path.exists() or path.is_symlink():
            if _is_ours(path):
                action = "updated"
            else:
                chained = directory / (hook + CHAINED)
                if chained.exists() or chained.is_symlink():
                    _set_aside(chained)  # left by an install whose hook was replaced
                os.rename(path, chained)  # keeps the user's bytes and mode
                action = "chained"
        tmp = directory / f".{hook}.indexer-tmp"
        tmp.write_text(script, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, path)
        changes.append(HookChange(hook, action))
    return changes


def uninstall(repo_path: str | None) -> list[HookChange]:
    directory = hooks_dir(repo_path)
    changes = []
    for hook in HOOKS:
        path = directory / hook
        chained = directory / (hook + CHAINED)
        if path.exists() and _is_ours(path):
            path.unlink()
            if chained.exists() or chained.is_symlink():
                os.rename(chained, path)
                changes.append(HookChange(hook, "restored"))
            else:
                changes.append(HookChange(hook, "removed"))
        elif chained.exists() or chained.is_symlink():
            # The user replaced our hook: theirs stays, the hook ours used to chain is kept
            # aside so a later install starts clean.
            changes.append(
                HookChange(hook, f"replaced by the user; kept {_set_aside(chained).name}")
            )
        else:
            changes.append(HookChange(hook, "absent"))
    return changes
