"""Path classes (tests, examples, docs, vendored, generated, data) that ranking down-weights."""

from __future__ import annotations

import re

# Path classes that are down-weighted at query time unless the query asks for them.
FLAG_TEST, FLAG_EXAMPLE, FLAG_DOCS, FLAG_VENDORED, FLAG_GENERATED = 1, 2, 4, 8, 16
FLAG_DATA = 32  # data and configuration files: below code unless the query asks for them
_FLAG_PATTERNS = [
    (
        FLAG_TEST,
        re.compile(
            r"(^|/)(tests?|testing|__tests__|spec|specs|testsuite)(/|$)|(^|/)test_[^/]*$|"
            r"_tests?\.[a-z]+$|\.(test|spec)\.[a-z]+$|(^|/)conftest\.py$"
        ),
    ),
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
    flags = 0
    for flag, pattern in _FLAG_PATTERNS:
        if pattern.search(path.lower()):
            flags |= flag
    return flags
