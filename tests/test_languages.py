"""Every grammar of tree-sitter-language-pack, the generic definition extractor, the plain-text
fallback and the warnings of builds that index (almost) nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer import Index, build_index
from indexer.source.chunker import chunk_file
from indexer.source.languages import (
    GRAMMAR_LANGUAGES,
    PLAIN_TEXT,
    UNUSED_GRAMMARS,
    detect_language,
    grammar_of,
    pack_grammars,
)
from indexer.source.specs import SPECS
from indexer.source.treenodes import parser

from .conftest import MakeRepo, run_cli

POLYGLOT = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "polyglot"


def test_every_grammar_of_the_pack_is_used_or_deliberately_left_out() -> None:
    used = set(GRAMMAR_LANGUAGES) | {spec.grammar for spec in SPECS.values()}
    left_out = {name for names in UNUSED_GRAMMARS.values() for name in names.split()}
    assert used <= pack_grammars()
    assert not used & left_out
    assert pack_grammars() - used == left_out
    for grammar in sorted(used):
        assert parser(grammar).parse(b"x").root_node is not None


@pytest.mark.parametrize(
    ("path", "qualnames"),
    [
        ("elixir/lib/lru_cache.ex", {"Store.LruCache", "Store.LruCache.evict_oldest"}),
        ("haskell/src/LruCache.hs", {"Cache", "evictOldest", "insert"}),
        ("ocaml/lib/backoff.ml", {"delay_seconds", "retry"}),
        ("erlang/src/lru_cache.erl", {"new", "put", "evict_oldest"}),
        ("clojure/src/lru_cache.clj", {"new-cache", "evict-oldest", "put"}),
        ("dart/lib/lru_cache.dart", {"LruCache", "LruCache.put", "LruCache._evictOldest"}),
        ("dart/lib/backoff.dart", {"retryDelay", "retry"}),
        ("r/R/lru_cache.R", {"new_cache", "evict_oldest", "cache_put"}),
        ("julia/src/LruCache.jl", {"LruCache", "evict_oldest!", "put!"}),
        ("perl/lib/LruCache.pm", {"new", "put", "evict_oldest"}),
        ("objc/Sources/LRUCache.m", {"LRUCache", "LRUCache.evictOldest"}),
        ("elm/src/Settings.elm", {"parseSettings", "splitPair"}),
        ("nim/src/lru_cache.nim", {"newLruCache", "evictOldest", "put"}),
        ("solidity/contracts/Vault.sol", {"Vault", "Vault.deposit", "Vault.withdraw"}),
        ("fortran/src/stats.f90", {"stats", "stats.mean_stddev"}),
        ("powershell/Modules/Backup.psm1", {"New-Backup", "Remove-OldBackups"}),
        ("gleam/src/lru_cache.gleam", {"put", "evict_oldest"}),
        ("infra/Makefile", {"build", "test", "migrate", "release"}),
        ("infra/codec/CMakeLists.txt", {"add_codec_test"}),
        ("infra/deploy/main.tf", {"resource.aws_s3_bucket.uploads", "variable.region"}),
        ("infra/db/schema.sql", {"accounts", "orders"}),
        ("infra/api/orders.proto", {"Order", "Orders"}),
    ],
)
def test_the_generic_extractor_finds_definitions(path: str, qualnames: set[str]) -> None:
    language = detect_language(path)
    assert language is not None and language not in SPECS
    assert grammar_of(language) == language
    chunks = chunk_file(path, language, "b", (POLYGLOT / path).read_bytes())
    found = {c.qualname for c in chunks if c.kind in ("function", "method", "class")}
    assert qualnames <= found
    # Every line of the file is in some chunk.
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    lines = (POLYGLOT / path).read_text().splitlines()
    assert {n + 1 for n, line in enumerate(lines) if line.strip()} <= covered


def test_a_function_body_keeps_its_documenting_comment() -> None:
    path = "elixir/lib/lru_cache.ex"
    chunks = chunk_file(path, "elixir", "b", (POLYGLOT / path).read_bytes())
    evict = next(c for c in chunks if c.symbol == "evict_oldest")
    assert evict.docstring.startswith("Drop the key used longest ago")
    assert evict.kind == "method"


def test_any_other_text_file_is_text_and_binary_formats_are_not() -> None:
    assert detect_language("deploy/nginx.conf.j2") == PLAIN_TEXT
    assert detect_language("NOTICE") == PLAIN_TEXT
    assert detect_language("src/thing.unknownext") == PLAIN_TEXT
    assert detect_language("assets/logo.png") is None
    assert detect_language("Dockerfile.prod") == "dockerfile"
    assert detect_language("lib/app.ex") == "elixir"


def test_unknown_languages_are_searchable(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "lib/lru_cache.ex": (POLYGLOT / "elixir/lib/lru_cache.ex").read_text(),
            "src/Backoff.hs": (POLYGLOT / "haskell/src/Backoff.hs").read_text(),
            "templates/proxy.conf.j2": (POLYGLOT / "infra/deploy/nginx.conf.j2").read_text(),
            "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0",
        }
    )
    report = build_index(root, progress=False)
    assert report.files == 3 and report.skipped == {"binary": 1}
    assert report.warnings == []
    index = Index.open(root)
    assert index.search("evict_oldest")[0].path == "lib/lru_cache.ex"
    assert index.search("delayMicros")[0].qualname == "delayMicros"
    # Text of an unknown format ranks like a data file (demoted), below code, but it is found;
    # an identifier only it holds finds it first.
    found = [r.path for r in index.search("reverse proxy", k=10, cut=False)]
    assert "templates/proxy.conf.j2" in found
    assert index.search("proxy_set_header")[0].path == "templates/proxy.conf.j2"


def test_a_build_that_indexes_nothing_says_so(make_repo: MakeRepo) -> None:
    big = b"x" * 1_100_000
    root = make_repo({"data/a.txt": big, "data/b.txt": big, "c.py": b"#" * 1_100_000})
    result = run_cli("build", cwd=root)
    assert result.returncode == 0
    assert "WARNING: indexed 0 files of 3 tracked (too_large 3)" in result.stderr
    status = run_cli("status", "--json", cwd=root)
    assert json.loads(status.stdout)["warnings"] == [
        "indexed 0 files of 3 tracked (too_large 3): every search will be empty"
    ]
    text = run_cli("status", cwd=root)
    assert "WARNING" in text.stdout


def test_a_build_that_skips_most_text_files_warns(make_repo: MakeRepo) -> None:
    files: dict[str, str | bytes] = {f"gen{i}.js": "var a=1;" * 2000 for i in range(3)}
    files["main.py"] = "def main():\n    return 1\n"
    root = make_repo(files)
    report = build_index(root, progress=False)
    assert report.files == 1
    assert report.warnings == ["skipped most tracked text files: 3 (minified 3) vs 1"]


def reference_language(path: str) -> str | None:
    """detect_language as written before, with PurePosixPath."""
    from pathlib import PurePosixPath

    from indexer.source import languages as L

    pure = PurePosixPath(path)
    name = pure.name
    if name in L.GRAMMAR_FILENAMES:
        return L.GRAMMAR_FILENAMES[name]
    if name in L.TEXT_FILENAMES:
        return L.TEXT_FILENAMES[name]
    suffix = pure.suffix.lower()
    if suffix in L.BINARY_EXTENSIONS:
        return None
    known = (
        L.EXTENSIONS.get(suffix)
        or L.GRAMMAR_EXTENSIONS.get(suffix)
        or L.TEXT_EXTENSIONS.get(suffix)
    )
    if known:
        return known
    if name.startswith("Dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    return PLAIN_TEXT


_PIECES = [
    "src",
    "Dockerfile",
    "Makefile",
    ".",
    "..",
    "x",
    "py",
    "PY",
    "ts",
    "md",
    "png",
    "json",
    "",
]


@given(
    parts=st.lists(
        st.lists(st.sampled_from(_PIECES), min_size=1, max_size=3)
        .map(".".join)
        .filter(lambda p: p not in ("", ".", "..")),
        min_size=1,
        max_size=4,
    )
)
def test_languages_by_name_and_suffix_as_pathlib_gives_them(parts: list[str]) -> None:
    """detect_language splits a git path by hand, without PurePosixPath: same answers."""
    path = "/".join(parts)
    assert detect_language(path) == reference_language(path), path
