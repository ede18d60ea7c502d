"""`.indexerignore`: gitignore-syntax rules, committed at the repository root, that exclude more
files from the index (`generated/`, `*.sql`) or re-include a file a built-in rule skipped
(`!docs/example.env`).

Read from the indexed commit's tree, not the work tree, so an index always matches its commit
and a shared index is the same for every clone. Matching uses `pathspec`'s GitIgnoreSpec, which
implements git's own rules (negation, anchoring, `**`, directory patterns, last match wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IGNORE_FILE = ".indexerignore"


@dataclass(frozen=True)
class IgnoreRules:
    spec: Any  # pathspec.GitIgnoreSpec, or None when the commit has no .indexerignore

    @classmethod
    def from_text(cls, text: str) -> IgnoreRules:
        if not text.strip():
            return cls(None)
        import pathspec

        return cls(pathspec.GitIgnoreSpec.from_lines(text.splitlines()))

    @classmethod
    def from_tree(cls, repo: Any, tree: Any) -> IgnoreRules:
        try:
            entry = tree[IGNORE_FILE]
        except KeyError:
            return cls(None)
        if entry.type_str != "blob":
            return cls(None)
        return cls.from_text(bytes(repo[entry.id].data).decode("utf-8", "replace"))

    def decision(self, path: str) -> bool | None:
        """True: excluded; False: re-included by a `!` rule; None: no rule matches."""
        if self.spec is None:
            return None
        include: bool | None = self.spec.check_file(path).include
        return include
