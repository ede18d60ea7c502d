"""Name rules shared by resolution and the name index: Python module names, relative imports,
and which method names are too common to resolve by name alone."""

from __future__ import annotations

import posixpath

# Names of builtin types' and common libraries' methods: `d.get()` is far more often dict.get
# than the repository's only `get` method.
_COMMON_METHOD_NAMES = """
    get set items keys values append extend insert pop remove clear update add discard copy
    index count sort reverse join split rsplit strip lstrip rstrip replace format lower upper
    startswith endswith encode decode find search match sub group groups read write close open
    flush seek readline readlines send recv run start stop put wait next iter apply map filter
    reduce load loads dump dumps exists mkdir resolve parse render emit call then catch push
    shift slice splice toString valueOf forEach length size equals hashCode compareTo Println
    Printf Sprintf Errorf String Error Close Read Write Len
"""
_COMMON_METHODS = frozenset(_COMMON_METHOD_NAMES.split())


def distinctive(name: str) -> bool:
    """Whether a method name is rare enough to resolve by name on an object of unknown type."""
    if name in _COMMON_METHODS or name.startswith("__"):
        return False
    return len(name) >= 8 or "_" in name.strip("_") or any(c.isupper() for c in name[1:])


def python_module_names(path: str) -> list[str]:
    if not path.endswith((".py", ".pyi")):
        return []
    parts = path.rsplit(".", 1)[0].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return []
    names = [".".join(parts)]
    for i in range(1, min(len(parts), 3)):  # src/ layouts and sdist roots: a/src/pkg/mod.py
        names.append(".".join(parts[i:]))
    return names


def absolute_module(path: str, spec: str) -> str:
    level = len(spec) - len(spec.lstrip("."))
    if level == 0:
        return spec
    package = path.rsplit(".", 1)[0].split("/")[:-1]  # a/b/c.py and a/b/__init__.py -> a.b
    if level > 1:
        package = package[: len(package) - (level - 1)]
    rest = spec[level:]
    return ".".join([*package, rest] if rest else package)


def stem(path: str) -> str:
    return posixpath.basename(path).split(".", 1)[0]
