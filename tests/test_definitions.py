"""Exact definitions (identifier queries) come from a compact table of hashed names: the rows it
returns are exactly those a plain name -> rows dictionary gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from indexer import Index, build_index
from indexer.index.build import update_index

from .conftest import MakeRepo, commit_all, write_files

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
    columns = index.row_columns
    for row, (symbol, names) in enumerate(zip(columns.symbols, columns.defines, strict=True)):
        for name in {symbol.lower(), *names.lower().split()} - {""}:
            table.setdefault(name, []).append(row)
    return table


def assert_defining_rows_match(index: Index) -> dict[str, list[int]]:
    table = reference(index)
    kinds = list(index.row_columns.kinds)
    for names in [{n} for n in table] + [{"circle", "area"}, {"nothing_here"}, {""}]:
        rows = {r for n in names for r in table.get(n, ())}
        expected = sorted(rows, key=lambda r: (kinds[r] == "module", r))
        assert index.defining_rows(names).tolist() == expected
        for limit in (1, 2, 3):
            assert index.defining_rows(names, limit).tolist() == expected[:limit]
    return table


def test_defining_rows_match_a_plain_dictionary(make_repo: MakeRepo) -> None:
    root: Path = make_repo(FILES)
    build_index(root, progress=False)
    index = Index.open(root)
    table = assert_defining_rows_match(index)
    assert {"circle", "area", "make_circle", "makecircle"} <= set(table)
    assert len(index.defining_rows({"area"})) == 2


def test_a_one_shot_search_reads_kinds_until_it_has_enough_definitions(
    make_repo: MakeRepo,
) -> None:
    """A name defined by ~700 rows, modules first in row order: a one-shot process (kinds read
    a block at a time) gives the first rows a long-lived one (every kind coded) gives."""
    files: dict[str, str | bytes] = {}
    for f in range(12):
        classes = "".join(
            f"class C{c}:\n    def run(self):\n        return {c}\n\n" for c in range(60)
        )
        files[f"pkg/m{f:02d}.py"] = ("run = 1\n\n" if f % 3 == 0 else "") + classes
    root: Path = make_repo(files)
    build_index(root, progress=False)
    long_lived = Index.open(root, worktree=False)
    one_shot = Index.open(root, worktree=False, one_shot=True)
    assert one_shot.row_columns.keep_codes is False  # kinds decoded row by row, in blocks
    every = long_lived.defining_rows({"run"})
    kinds = list(long_lived.row_columns.kinds)
    assert len(every) > 700 and {kinds[r] for r in every[-4:]} == {"module"}
    for limit in (1, 255, 256, 400, 700, len(every), len(every) + 5, None):
        want = every.tolist()[:limit]
        assert one_shot.defining_rows({"run"}, limit).tolist() == want
        assert long_lived.defining_rows({"run"}, limit).tolist() == want


def test_defining_rows_over_updated_segments(make_repo: MakeRepo) -> None:
    """After updates the live rows of a segment are not in global order and some are deleted:
    the table still gives a plain dictionary's rows, and the columns read as a full build's."""
    root: Path = make_repo(FILES)
    build_index(root, progress=False)
    write_files(
        root, {"pkg/other.py": "def area():\n    return 2\n", "aaa/first.py": "def area(): 1\n"}
    )
    (root / "lib/util.js").unlink()
    commit_all(root, "change")
    update_index(root, progress=False)
    index = Index.open(root, worktree=False)
    assert len(index.space.segments) >= 2 and not index.space.concatenated
    table = assert_defining_rows_match(index)
    assert len(table["area"]) == 3 and "makecircle" not in table
    full = tmp_index(root)
    for name in ("symbols", "kinds", "defines"):
        assert list(getattr(index.row_columns, name)) == list(getattr(full.row_columns, name))
        column = getattr(index.row_columns, name)
        rows = [len(index) - 1, 0, 3]
        assert column.take(rows) == [list(column)[r] for r in rows]


def tmp_index(root: Path) -> Index:
    """A full build of the same commit, in a directory of its own."""
    out = root.parent / (root.name + "-full")
    build_index(root, index_dir=out, progress=False)
    return Index.open(root, index_dir=out, worktree=False)


def test_the_stored_table_is_the_same_in_every_process(make_repo: MakeRepo) -> None:
    """The segment's keys are CRC-32s, not `hash` (randomised per process): searches with
    other hash seeds find the same definitions, and the table is what its columns give."""
    import json
    import os
    import subprocess
    import sys

    from indexer.index import defined_names

    root: Path = make_repo(FILES)
    build_index(root, progress=False)
    index = Index.open(root, worktree=False)
    (segment,) = index.space.segments
    keys, rows, unique = segment.defined_names
    want_keys, want_rows, _ = defined_names.table(list(segment.symbols), list(segment.defines))
    assert keys.tolist() == want_keys.tolist() and rows.tolist() == want_rows.tolist()
    assert unique  # every key one name: one row checked per key
    found = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, INDEXER_SERVE="0")
        out = subprocess.run(
            [sys.executable, "-m", "indexer", "search", "make_circle", "--json", "-k", "3"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found.append([(r["path"], r["symbol"]) for r in json.loads(out)])
    assert found[0] == found[1] and found[0][0] == ("pkg/shapes.py", "make_circle")


def test_a_segment_whose_keys_collide_checks_every_row(make_repo: MakeRepo) -> None:
    """Where two names of a segment share a key (`defined_unique` false), each row found is
    checked against its own names: the same rows as a plain dictionary."""
    root: Path = make_repo(FILES)
    build_index(root, progress=False)
    index = Index.open(root, worktree=False)
    (segment,) = index.space.segments
    keys, rows, _ = segment.defined_names
    segment.__dict__["defined_names"] = (keys, rows, False)  # as a colliding segment reads
    assert_defining_rows_match(index)


def test_the_reranker_boosts_definitions_named_exactly_or_by_all_their_parts(
    make_repo: MakeRepo,
) -> None:
    """A symbol query boosts a definition it names exactly (x2) and one whose every name part
    it has (x1.5, for names of 4+ letters), whatever file holds it."""
    from indexer.search.query import parse_query
    from indexer.search.rerank import rerank

    root: Path = make_repo(
        {
            "pkg/shapes.py": (
                "class Circle:\n    def area(self):\n        return 3\n\n"
                "def make_circle():\n    return Circle()\n\n"
                "def circle_area():\n    return 1\n\n"
                "def make_circle_area():\n    return 2\n"
            ),
            "pkg/more.py": "def circle_area():\n    return 4\n",
            "pkg/limits.py": "import os\n\nMAX_RADIUS = 10\nMIN_RADIUS = int(os.environ['MIN'])\n",
        }
    )
    build_index(root, progress=False)
    index = Index.open(root)
    rows = np.arange(len(index))
    weights = index.fusion["rerank"]

    def factors(query: str) -> dict[tuple[str, str], float]:
        q = parse_query(query)
        assert q.symbol_like
        boosted = rerank(index, q, rows, np.ones(len(rows)))
        saved, weights["definition"] = weights["definition"], 0.0
        try:
            plain = rerank(index, q, rows, np.ones(len(rows)))
        finally:
            weights["definition"] = saved
        symbols, paths = index.row_columns.symbols, index.space.paths
        return {
            (paths[int(index._chunk_file[r])], symbols[r]): round(float(boosted[r] / plain[r]), 6)
            for r in rows.tolist()
            if symbols[r]
        }

    got = factors("circle_area")
    assert got[("pkg/shapes.py", "circle_area")] == got[("pkg/more.py", "circle_area")] == 2.0
    assert got[("pkg/shapes.py", "Circle")] == got[("pkg/shapes.py", "area")] == 1.5
    assert got[("pkg/shapes.py", "make_circle")] == 1.0  # `make` is not asked
    assert got[("pkg/shapes.py", "make_circle_area")] == 1.0
    got = factors("makeCircle")
    assert got[("pkg/shapes.py", "make_circle")] == got[("pkg/shapes.py", "Circle")] == 1.5
    assert got[("pkg/shapes.py", "circle_area")] == 1.0
    got = factors("MAX_RADIUS")  # a module-level name: its block defines it
    assert got[("pkg/limits.py", "limits")] == 2.0
    # A long-lived process read the names of the rows their part bits let through only; a
    # one-shot process reads every definition's: the same factors.
    assert index.row_columns.keep_codes
    long_lived = {q: factors(q) for q in ("circle_area", "makeCircle", "Circle.area", "MAX_RADIUS")}
    index = Index.open(root, one_shot=True)
    weights = index.fusion["rerank"]
    assert not index.row_columns.keep_codes
    assert {q: factors(q) for q in long_lived} == long_lived


def test_part_bits_let_through_every_symbol_spelled_by_the_terms(make_repo: MakeRepo) -> None:
    """`spelled_by` keeps every row whose symbol's parts are all among the terms (and may keep
    a few others); a row's bits are computed when it is first met, then kept."""
    from indexer.index.row_columns import KNOWN, part_bits
    from indexer.index.tokens import split_identifier

    names = [f"{a}_{b}" for a in ("make", "read", "parse", "load") for b in ("user", "file", "row")]
    body = "".join(f"def {name}():\n    return 1\n\n" for name in names)
    root: Path = make_repo({"pkg/names.py": body + "def readFile():\n    return 2\n"})
    build_index(root, progress=False)
    index = Index.open(root)
    columns = index.row_columns
    rows = np.arange(len(index))
    terms = {"read", "file"}
    half = rows[: len(rows) // 2]
    columns.spelled_by(half, part_bits(terms))
    assert (columns._part_bits[half] & KNOWN).all()  # met: kept
    assert not (columns._part_bits[rows[len(half) :]] & KNOWN).any()  # not met yet
    kept = columns.spelled_by(rows, part_bits(terms))
    assert kept is not None
    spelled = [bool(s) and set(split_identifier(s)) <= terms for s in columns.symbols]
    assert spelled.count(True) == 2  # read_file, readFile
    assert all(kept[np.flatnonzero(spelled)])
    assert kept.sum() < len(rows)  # the bits rule most rows out
    assert Index.open(root, one_shot=True).row_columns.spelled_by(rows, 0) is None
