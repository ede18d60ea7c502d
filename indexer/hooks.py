"""Install and uninstall the git hooks that keep the index fresh.

Existing hooks are chained, not overwritten: a user's hook is renamed to
`<hook>.indexer-chained` and run first by ours; uninstall renames it back, byte for byte.
`core.hooksPath` is respected.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import IndexerError
from .gitsource import open_repository

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "indexer-hook: keeps the code index fresh"
CHAINED = ".indexer-chained"


def hook_template() -> str:
    here = Path(__file__).resolve().parent
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


def install(repo_path: str | None) -> list[HookChange]:
    directory = hooks_dir(repo_path)
    directory.mkdir(parents=True, exist_ok=True)
    script = hook_template().replace("__PYTHON__", shlex.quote(sys.executable))
    changes = []
    for hook in HOOKS:
        path = directory / hook
        action = "installed"
        if path.exists() or path.is_symlink():
            if _is_ours(path):
                action = "updated"
            else:
                chained = directory / (hook + CHAINED)
                if chained.exists():
                    raise IndexerError(f"{chained} already exists; remove it or uninstall first")
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
        else:
            changes.append(HookChange(hook, "absent"))
    return changes
