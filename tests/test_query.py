"""Reading queries like a developer: issue-sized reports, symbols, path classes by content."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from indexer import Index, build_index
from indexer.search.query import (
    _DOTTED,
    _IDENT_SHAPE,
    _PATH,
    compiled,
    in_words,
    parse_query,
    salient_text,
    shaped_words,
)
from indexer.search.rerank import doc_correction, shape_flags
from indexer.source.pathclass import (
    FLAG_DATA,
    FLAG_DOCS,
    FLAG_TEST,
    FLAG_VENDORED,
    content_flags,
)

from .conftest import MakeRepo

REPORT = """Widget.render crashes when the label is empty
I upgraded widget last week and our dashboards broke. We have tests for this in our own
project and they all fail now, the docs do not mention any change. Steps:

```python
from widget.core import Widget
Widget(label="").render()
```

Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/widget/core.py", line 42, in render
    width = layout.measure(self.label)
ZeroDivisionError: division by zero

Thanks for looking, widget is otherwise great and we use it in many places every day.
"""


def test_a_report_is_read_for_its_code_evidence() -> None:
    q = parse_query(REPORT)
    assert q.issue_sized
    evidence = salient_text(REPORT)
    assert "/usr/lib/python3/site-packages/widget/core.py" in evidence
    assert "ZeroDivisionError: division by zero" in evidence
    assert "layout.measure" in evidence
    assert {"render", "measure", "zerodivisionerror", "core"} <= q.salient
    assert "dashboards" not in q.salient
    weights = q.term_weights(2.0, 0.5)
    assert weights["measur"] == 2.0 and weights["dashboard"] == 0.5
    # Words of the body do not ask for tests or docs; the title would.
    assert "tests" in q.terms and "tests" not in q.ask_terms
    assert parse_query("how are widget tests organised").ask_terms >= {"tests"}
    assert q.paths == ("/usr/lib/python3/site-packages/widget/core.py",)


PIECES = [
    "sympy/core/basic.py",
    "./pkg/mod.rs",
    "/abs/path/x.tsx",
    "a-b.py",
    "-x.py",
    "foo.bar.baz()",
    "e.g.",
    "x.y",
    ".hidden",
    "pkg.",
    "Widget.render",
    "snake_case",
    "camelCase",
    "HTTPServer",
    "Title",
    "word",
    "über.straße",
    "naïve",
    "ÀB",
    "a::b",
    "f()",
    "v1.2.3",
    "(sympy.core)",
    '"File',
    "line",
    "12,",
    "in",
    "x.py:12",
]
SPACES = [" ", "\n", "\t", "\u00a0", "\u2003", "\x1c", ""]


@settings(max_examples=400, deadline=None)
@example(pieces=["(sympy.core)", "x.py:12"], spaces=[" "])
@given(
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=12),
    spaces=st.lists(st.sampled_from(SPACES), min_size=1, max_size=12),
)
def test_paths_dotted_names_and_shaped_words_are_found_word_by_word(
    pieces: list[str], spaces: list[str]
) -> None:
    """What parse_query finds in a text's words is what the patterns find in the whole text."""
    text = "".join(p + spaces[i % len(spaces)] for i, p in enumerate(pieces))
    words = text.split()
    assert in_words(_PATH, words) == compiled(_PATH).findall(text)
    assert in_words(_DOTTED, words) == compiled(_DOTTED).findall(text)
    assert shaped_words(words) == [w for w in words if compiled(_IDENT_SHAPE).search(w)]


def test_short_queries_keep_every_term_equal() -> None:
    q = parse_query("where is the label measured")
    assert not q.issue_sized and q.term_weights(2.0, 0.5) == {}
    assert q.match_terms == q.terms


@pytest.fixture
def widget_repo(make_repo: MakeRepo) -> Path:
    return make_repo(
        {
            "src/widget/core.py": (
                "from .layout import measure\n\n\nclass Widget:\n"
                "    def __init__(self, label):\n        self.label = label\n\n"
                "    def render(self):\n        width = measure(self.label)\n"
                "        return '-' * width\n"
            ),
            "src/widget/layout.py": (
                "def measure(label):\n    '''Width of a label in cells.'''\n"
                "    return 100 // len(label)\n"
            ),
            "src/widget/globals.py": "g = object()  # the request-global namespace\n",
            "tests/test_widget.py": (
                "import pytest\nfrom widget.core import Widget\n\n\n"
                "def test_render_empty_label():\n"
                "    with pytest.raises(ZeroDivisionError):\n"
                "        Widget(label='').render()\n"
            ),
            "CHANGES.rst": (
                "Widget changes\n==============\n\n"
                "* render: an empty label no longer crashes (division by zero in measure).\n"
                "* Widget label layout measure render dashboards docs.\n"
            ),
            "test_runner.sh": '#!/bin/sh\nrun_all() {\n  for f in *.job; do sh "$f"; done\n}\n',
            "dapper/SqlMapper.cs": (
                "public static partial class SqlMapper {\n  int Query() { return 1; }\n}\n"
            ),
            "dapper/SqlMapper.Async.cs": (
                "public static partial class SqlMapper {\n"
                "  async Task<int> QueryAsync() { return await Task.FromResult(1); }\n}\n"
            ),
            "dapper/SqlMapper.Settings.cs": (
                "public static partial class SqlMapper {\n  public static class Settings { }\n}\n"
            ),
        }
    )


def test_a_report_ranks_the_code_that_needs_the_fix_first(widget_repo: Path) -> None:
    build_index(widget_repo, progress=False)
    index = Index.open(widget_repo)
    paths = [r.path for r in index.search(REPORT, k=5)]
    assert paths[0] in ("src/widget/core.py", "src/widget/layout.py")
    # Neither the changelog nor the test outranks the code, although the report says
    # "tests", "docs" and the project's own name.
    assert "CHANGES.rst" not in paths[:2]
    assert "tests/test_widget.py" not in paths[:2]
    assert {"widget"} <= index.project_terms


def test_one_letter_names_and_partial_classes(widget_repo: Path) -> None:
    build_index(widget_repo, progress=False)
    index = Index.open(widget_repo)
    assert index.search("g")[0].path == "src/widget/globals.py"
    assert index.search("SqlMapper")[0].path == "dapper/SqlMapper.cs"


def test_test_files_are_decided_by_path_and_content() -> None:
    assert content_flags("tests/test_widget.py", "import pytest\n") & FLAG_TEST
    assert content_flags("tests/fixtures/data.py", "x = 1\n") & FLAG_TEST  # test directory
    assert content_flags("src/widget_test.go", "func TestX(t *testing.T) {}\n") & FLAG_TEST
    assert content_flags("lib/cart.test.js", "describe('cart', () => {})\n") & FLAG_TEST
    # Named like a test, but the project's own code: not a test.
    assert not content_flags("test_runner.sh", "run_all() {\n  sh x\n}\n") & FLAG_TEST
    assert not content_flags("test_core.bash", "main() { echo hi; }\n") & FLAG_TEST


def test_docs_by_name_alone_are_corrected_at_query_time() -> None:
    # Prose stays documentation.
    for path in ("README", "CHANGES.rst", "notes/design.md", "requirements.txt", "doc/x.pyx"):
        assert doc_correction(path) == FLAG_DOCS, path
    # A grammar reads it: code, whatever its extension says.
    assert doc_correction("codec/CMakeLists.txt") == 0
    # Unknown format with an extension (Cython, templates): ranked like a data file.
    assert doc_correction("pkg/_speedups.pyx") == FLAG_DATA
    assert doc_correction("deploy/nginx.conf.j2") == FLAG_DATA


def test_a_cmake_file_is_code_not_docs(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "codec/CMakeLists.txt": (
                "add_library(codec codec.c)\n"
                "function(add_codec_test name)\n  add_executable(${name} ${name}.c)\n"
                "  target_link_libraries(${name} codec)\nendfunction()\n"
            ),
            "src/runner.py": (
                'def run(executable):\n    """Run a test executable."""\n    return executable()\n'
            ),
        }
    )
    build_index(root, progress=False)
    top = Index.open(root).search("add a test executable linked against the codec library")
    assert top[0].path == "codec/CMakeLists.txt"
    # Shapes the build's patterns miss: gettext catalogs, versioned or minified assets.
    assert shape_flags("pkg/locale/de/LC_MESSAGES/pkg.js") == FLAG_DATA
    assert shape_flags("pkg/static/jquery-3.5.1.js") == FLAG_VENDORED
    assert shape_flags("pkg/static/app.min.js") == FLAG_VENDORED
    assert shape_flags("pkg/locale/__init__.py") == 0


def test_top_directories_are_each_files_first_directory_src_and_lib_their_second(
    make_repo: MakeRepo,
) -> None:
    """The bisection over sorted paths finds what a look at every path finds."""
    files = [
        "setup.py", "top.py", "top/x.py", "top/deep/y.py", "top-x/a.py", "top0/b.py",
        "src/a.py", "src/pkg.py", "src/pkg/x.py", "src/pkg/sub/y.py", "src/pkg0/z.py",
        "src/pkg-x/w.py", "lib/util/z.py", "lib/tool.py", "docs/index.md", "tests/test_x.py",
    ]  # fmt: skip
    repo = make_repo({f: "x = 1\n" for f in files})
    build_index(repo, progress=False)
    space = Index.open(repo).space
    expected = set()
    for path in space.paths:
        parts = path.split("/")
        if len(parts) > 2 and parts[0] in ("src", "lib"):
            expected.add(parts[1])
        elif len(parts) > 1:
            expected.add(parts[0])
    assert space.top_directories() == expected
    assert expected >= {"top", "top-x", "top0", "src", "pkg", "pkg0", "pkg-x", "util", "lib"}
