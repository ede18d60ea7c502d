"""Where a file's imports point (a repository file, a Go/Java package directory, or nothing)
and the names they bind in the file: the part of resolution that reads only the importing file
and the list of paths. Worked out per file, the first time it is asked."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from .model import JS_LANGUAGES, FileGraph
from .names import absolute_module, python_module_names

_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")
Binding = tuple[str, str]  # (kind: module/package/symbol/default/external, value)


class FactSource(Protocol):
    """What resolution reads: the live files (sorted paths), each file's facts, and the
    definitions of a short name anywhere in the repository."""

    @property
    def paths(self) -> Sequence[str]: ...

    def language(self, path: str) -> str: ...

    def file(self, path: str) -> FileGraph: ...

    def head(self, path: str) -> FileGraph:
        """The file's facts, its call sites possibly left out."""
        ...

    def definitions(self, name: str) -> list[tuple[str, str]]:
        """(path, kind) of every definition whose short name is `name`."""
        ...


class Imports:
    """Import targets and per-file binding tables (file -> bound name -> what it names)."""

    def __init__(self, source: FactSource) -> None:
        self.source = source
        self.paths = set(source.paths)
        self.dirs: dict[str, list[str]] = defaultdict(list)
        self.py_modules: dict[str, str] = {}
        for path in source.paths:
            self.dirs[posixpath.dirname(path)].append(path)
            if source.language(path) == "python":
                for name in python_module_names(path):
                    self.py_modules.setdefault(name, path)
        self._bindings: dict[str, dict[str, Binding]] = {}
        self._stars: dict[str, list[str]] = {}  # path -> files imported with *
        self._targets: dict[tuple[str, str, str], str | None] = {}

    def bindings(self, path: str) -> dict[str, Binding]:
        table = self._bindings.get(path)
        if table is None:
            table = self._bind(path)
        return table

    def stars(self, path: str) -> list[str]:
        self.bindings(path)
        return self._stars[path]

    # -- imports ---------------------------------------------------------------------------------
    def _bind(self, path: str) -> dict[str, Binding]:
        fg = self.source.head(path)
        table: dict[str, Binding] = {}
        stars: list[str] = []
        for spec, name, alias in fg.imports:
            target = self.target(fg, spec)
            if fg.language == "python":
                self._bind_python(fg, spec, name, alias, target, table, stars)
            elif fg.language == "go":
                if target:
                    table[alias] = ("package", target)
            elif name == "*":
                if target:
                    stars.extend(self.dirs.get(target, []) if fg.language == "java" else [target])
            elif target:
                if name in ("", "default") and fg.language != "java":
                    table[alias] = ("module" if name == "" else "default", target)
                else:
                    table[alias or name] = ("symbol", f"{target}\0{name}")
            elif alias:
                table[alias] = ("external", spec)
        self._bindings[path] = table
        self._stars[path] = stars
        return table

    def _bind_python(
        self,
        fg: FileGraph,
        spec: str,
        name: str,
        alias: str,
        target: str | None,
        table: dict[str, Binding],
        stars: list[str],
    ) -> None:
        if name == "":  # import a.b.c [as x]
            if alias:
                table[alias] = ("module", target) if target else ("external", spec)
            else:
                top = spec.split(".", 1)[0]
                top_target = self.py_modules.get(top)
                table.setdefault(top, ("module", top_target) if top_target else ("external", top))
                if target:
                    table[spec] = ("module", target)  # dotted receivers: a.b.c.f()
            return
        if name == "*":
            if target:
                stars.append(target)
            return
        absolute = absolute_module(fg.path, spec)
        submodule = self.py_modules.get(f"{absolute}.{name}" if absolute else name)
        if submodule:
            table[alias] = ("module", submodule)
        elif target:
            table[alias] = ("symbol", f"{target}\0{name}")
        else:
            table[alias] = ("external", f"{spec}.{name}")

    def target(self, fg: FileGraph, spec: str) -> str | None:
        """The repository file (Go/Java: directory) an import names, or None."""
        if fg.language == "python":
            return self.py_modules.get(absolute_module(fg.path, spec))
        where = posixpath.dirname(fg.path) if fg.language in JS_LANGUAGES else ""
        key = (fg.language, where, spec)
        if key not in self._targets:
            self._targets[key] = self._import_target(fg.language, where, spec)
        return self._targets[key]

    def _import_target(self, language: str, where: str, spec: str) -> str | None:
        if language in JS_LANGUAGES:
            if not spec.startswith("."):
                return None
            base = posixpath.normpath(posixpath.join(where, spec))
            candidates = [base] + [base + ext for ext in _JS_EXTENSIONS]
            candidates += [f"{base}/index{ext}" for ext in _JS_EXTENSIONS]
            if base.endswith(".js"):  # TS sources import their compiled name
                candidates += [base[:-3] + ".ts", base[:-3] + ".tsx"]
            return next((c for c in candidates if c in self.paths), None)
        if language == "go":
            best = None
            for directory in self.dirs:
                matches = directory and (spec == directory or spec.endswith("/" + directory))
                if matches and (best is None or len(directory) > len(best)):
                    best = directory
            return best
        if language == "java":
            suffix = spec.replace(".", "/")
            for directory in self.dirs:
                if directory == suffix or directory.endswith("/" + suffix):
                    return directory  # a package (for `*`) or the directory of a class
            # spec is a class (import a.b.C.method): the class file
            for path in self.source.paths:
                if path.endswith("/" + suffix + ".java") or path == suffix + ".java":
                    return path
        return None
