"""Exact definitions (identifier queries) come from a compact table of hashed names: the rows it
returns are exactly those a plain name -> rows dictionary gives."""

from __future__ import annotations

from pathlib import Path

from indexer import Index, build_index

from .conftest import MakeRepo

FILES: dict[str, str | bytes] = {
    "pkg/shapes.py": (
        "class Circle:\n    def area(self):\n        return 3\n\n"
        "def make_circle():\n    return Circle()\n\nRADIUS = 2\n"
    ),
    "pkg/other.py": "def area():\n    return 1\n\ndef Make_Circle():\n    return None\n",
    "lib/util.js": "function makeCircle() { return 1; }\nclass Circle {}\n",
}


def reference(index: Index) -> dict[str, list[int]]:
    """The previous table: lowercased name -> rows, in row order."""
    table: dict[str, list[int]] = {}
    columns = index._columns
    for row, (symbol, names) in enumerate(zip(columns["symbols"], columns["defines"], strict=True)):
        for name in {symbol.lower(), *names.lower().split()} - {""}:
            table.setdefault(name, []).append(row)
    return table


def test_defining_rows_match_a_plain_dictionary(make_repo: MakeRepo) -> None:
    root: Path = make_repo(FILES)
    build_index(root, progress=False)
    index = Index.open(root)
    table = reference(index)
    assert {"circle", "area", "make_circle", "makecircle"} <= set(table)
    kinds = index._columns["kinds"]
    for names in [{n} for n in table] + [{"circle", "area"}, {"nothing_here"}, {""}]:
        rows = {r for n in names for r in table.get(n, ())}
        expected = sorted(rows, key=lambda r: (kinds[r] == "module", r))
        assert index.defining_rows(names).tolist() == expected
    assert len(index.defining_rows({"area"})) == 2
