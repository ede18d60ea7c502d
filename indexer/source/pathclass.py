"""Path classes (tests, examples, docs, vendored, generated, data) that ranking down-weights."""

from __future__ import annotations

import functools
import re

from .languages import PLAIN_TEXT, detect_language

_TEST_DIR = r"(^|/)(tests?|testing|__tests__|spec|specs|testsuite)(/|$)"
_TEST_NAME = r"(^|/)test_[^/]*$|_tests?\.[a-z]+$|\.(test|spec)\.[a-z]+$|(^|/)conftest\.py$"
# Path classes that are down-weighted at query time unless the query asks for them.
FLAG_TEST, FLAG_EXAMPLE, FLAG_DOCS, FLAG_VENDORED, FLAG_GENERATED = 1, 2, 4, 8, 16
FLAG_DATA = 32  # data and configuration files: below code unless the query asks for them
_FLAG_PATTERNS = [
    (FLAG_TEST, re.compile(rf"{_TEST_DIR}|{_TEST_NAME}")),
    (
        FLAG_EXAMPLE,
        re.compile(r"(^|/)(examples?|demos?|samples?|tutorials?|benchmarks?|bench)(/|$)"),
    ),
    (FLAG_DOCS, re.compile(r"(^|/)(docs?|documentation)(/|$)|\.(md|rst|txt)$")),
    (
        FLAG_VENDORED,
        re.compile(r"(^|/)(_?compat|vendor|externals?|extern|deprecated|legacy)(/|\.|_|$)"),
    ),
    # Build output, and TypeScript declaration files (signatures without implementations).
    (FLAG_GENERATED, re.compile(r"(^|/)(dist|build|out|generated|gen)(/|$)|\.d\.[cm]?ts$")),
    (FLAG_DATA, re.compile(r"\.(json|ya?ml|toml|ini|cfg|conf|csv|tsv)$")),
]


def path_flags(path: str) -> int:
    # A text file of no known format (the plain-text fallback) ranks like documentation.
    flags = FLAG_DOCS if detect_language(path) == PLAIN_TEXT else 0
    return flags | directory_flags(path)


def directory_flags(path: str) -> int:
    """The classes a path's names put it in (a directory's too: `tests/`, `docs/`)."""
    flags = 0
    for flag, pattern in _FLAG_PATTERNS:
        if pattern.search(path.lower()):
            flags |= flag
    return flags


_TEST_DIR_RE = re.compile(_TEST_DIR)


# What test code says about itself, across frameworks: imports, test functions and classes,
# BDD blocks, annotations and attributes.
@functools.cache
def _test_content() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(framework marks, plain asserts), compiled on first use: a search never needs them."""
    marks = re.compile(
        r"^\s*(import|from)\s+(pytest|unittest|nose|hypothesis|doctest)\b|"
        r"^\s*(async\s+)?def test_\w*\(|^\s*class Test\w*|self\.assert[A-Z]\w*\(|"
        r"\b(describe|it|test|suite)\(\s*['\"`]|['\"](vitest|jest|mocha|chai|ava|tap)['\"]|"
        r"@Test\b|\[(Test|TestMethod|TestCase|Fact|Theory)\]|org\.junit|"
        r"^func Test\w*\(t \*testing\.T\)|#\[(test|cfg\(test\))\]|"
        r"RSpec\.|require ['\"](minitest|rspec|test/unit)|extends \w*TestCase\b|"
        r"^@test\s|^\s*(assert_\w+|assertEquals|assertTrue)\b",
        re.MULTILINE,
    )
    asserts = re.compile(r"^\s*(assert|expect|check|require)\b", re.MULTILINE)
    return marks, asserts


def looks_like_test(text: str) -> bool:
    """Test code by content: a test framework's marks, or dense plain asserts."""
    marks, assert_line = _test_content()
    if marks.search(text):
        return True
    asserts = len(assert_line.findall(text))
    return asserts >= 3 and asserts * 20 >= text.count("\n") + 1


def content_flags(path: str, text: str) -> int:
    """Path classes from the path and the content: a file *named* like a test (`test_x.sh`)
    outside a test directory is a test only if its content says so (a project's own sources
    may be named that way); doubt means not a test."""
    flags = path_flags(path)
    if flags & FLAG_TEST and not _TEST_DIR_RE.search(path.lower()) and not looks_like_test(text):
        flags &= ~FLAG_TEST
    return flags
