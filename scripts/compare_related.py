"""Compare `related` answers of the query-time resolver with the old global resolver.

    python scripts/compare_related.py TREE_OR_GIT_DIR... [--symbols 300] [--work DIR]

For each tree (a directory, committed into a bare repository under --work) or bare repository:
build the index with this checkout, build the old graph with the global resolver of commit
4ed996f (`indexer/graph.py` before issue 8, loaded from git; extraction + resolution of every
file, exactly as a full build did), then ask both `related` for a sample of symbols (by chunk
id, qualname and short name; both directions; depth 1 and 2) and compare the JSON answers.
Prints one line per tree and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import random
import re
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer import Index, build_index  # noqa: E402
from indexer.errors import IndexerError  # noqa: E402
from indexer.eval.evaluate import commit_tree  # noqa: E402
from indexer.index.graph.related import related  # noqa: E402

OLD_COMMIT = "4ed996f"


def old_graph_module() -> types.ModuleType:
    """indexer/graph.py as of OLD_COMMIT, its relative imports pointed at today's modules."""
    source = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:indexer/graph.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    def absolute(match: re.Match[str]) -> str:
        name = match.group(1)
        packages = ("indexer", "indexer.source", "indexer.index", "indexer.search", "indexer.eval")
        for package in packages:
            if importlib.util.find_spec(f"{package}.{name}") is not None:
                return f"from {package}.{name} import"
        raise SystemExit(f"cannot find module {name}")

    source = re.sub(r"from \.(\w+) import", absolute, source)
    module = types.ModuleType("old_graph")
    sys.modules["old_graph"] = module
    exec(compile(source, "old_graph.py", "exec"), module.__dict__)
    return module


class _OldIndex:
    """What the old `related` reads from an index: its graph and `show`."""

    def __init__(self, index: Index, graph: Any) -> None:
        self.graph = graph
        self.show = index.show


def _answer(fn: Any, index: Any, key: str, direction: str, depth: int) -> Any:
    try:
        return fn(index, key, direction, depth, 50)
    except IndexerError as exc:
        return f"error: {exc}"


def compare(git_dir: Path, index_dir: Path, old: types.ModuleType, n: int, seed: int) -> int:
    build_index(git_dir, index_dir=index_dir, progress=False)
    index = Index.open(git_dir, index_dir=index_dir)
    started = time.perf_counter()
    chunks = [index.chunk_at(i, with_text=False) for i in range(len(index))]
    paths = [f["path"] for f in index.files]
    blob_of = {f["path"]: f["blob"] for f in index.files}
    with tempfile.TemporaryDirectory() as tmp:  # what a full build of 4ed996f wrote
        old_graph = old.write_graph(Path(tmp), str(git_dir), paths, blob_of, chunks, jobs=1)
    old_s = time.perf_counter() - started
    kinds = old_graph.columns["kind"]
    symbols = [i for i, k in zip(old_graph.ids, kinds, strict=True) if k in old._SYMBOL_KINDS]
    rng = random.Random(seed)
    sample = rng.sample(symbols, min(n, len(symbols)))
    keys: list[str] = []
    for node in sample:
        attrs = old_graph.node(node)
        keys += [node, attrs["qualname"], f"{attrs['path']}::{attrs['qualname']}"]
        keys.append(attrs["qualname"].rsplit(".", 1)[-1])
    aliases = list(old_graph.chunk_node)
    keys += rng.sample(aliases, min(20, len(aliases)))
    keys += [f["path"] for f in rng.sample(index.files, min(20, len(index.files)))]
    old_index = _OldIndex(index, old_graph)
    differences = 0
    new_s = 0.0
    for key in dict.fromkeys(keys):
        for direction, depth in (("both", 1), ("callers", 2), ("callees", 2)):
            expected = _answer(old.related, old_index, key, direction, depth)
            started = time.perf_counter()
            got = _answer(related, index, key, direction, depth)
            new_s += time.perf_counter() - started
            if json.dumps(expected, sort_keys=True) != json.dumps(got, sort_keys=True):
                differences += 1
                if differences <= 3:
                    print(f"  differs: {key!r} {direction} depth {depth}")
    print(
        f"{git_dir.name}: {len(index.files)} files, {len(symbols)} symbols, "
        f"{len(dict.fromkeys(keys))} keys x 3 questions, {differences} differences "
        f"(old global graph {old_s:.1f} s; new answers {new_s:.1f} s in all)"
    )
    return differences


def fixture_tree(target: Path) -> Path:
    from tests.test_graph import GO_FILES, JAVA_FILES, JS_FILES, PY_FILES, RUBY_FILES

    for rel, content in {**PY_FILES, **JS_FILES, **GO_FILES, **JAVA_FILES, **RUBY_FILES}.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path)
    parser.add_argument("--symbols", type=int, default=300)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument(
        "--fixture",
        action="store_true",
        help="also the multi-language project of tests/test_graph.py (Go, Java, Ruby, ...)",
    )
    args = parser.parse_args()
    old = old_graph_module()
    work = args.work or Path(tempfile.mkdtemp(prefix="compare-related-"))
    total = 0
    sources = list(args.sources)
    if args.fixture:
        sources.append(fixture_tree(work / "trees" / "graph-fixture"))
    for source in sources:
        git_dir = source
        if not (source / "HEAD").is_file():
            git_dir = work / "repos" / f"{source.name}.git"
            if not (git_dir / "HEAD").is_file():
                commit_tree(source, git_dir)
        total += compare(git_dir, work / "indexes" / source.name, old, args.symbols, args.seed)
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
