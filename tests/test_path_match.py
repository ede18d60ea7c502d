"""A question names a file the way people write: plurals, abbreviations, compounds, dotted names."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from indexer import Index, build_index
from indexer.search.path_names import (
    PathWords,
    module_key,
    named_exactly,
    names_module,
    names_path,
    path_match,
    stem_key,
    written_stems,
)
from indexer.search.query import parse_query

from .conftest import MakeRepo

# Each case: a question, the file it names, and a rival file that shares more of its words.
CASES = [
    # `defaults/index.js` is named by its directory, and "default" names "defaults".
    (
        "default request settings",
        "lib/defaults/index.js",
        "const settings = { timeout: 0, maxRedirects: 5 };\nexport default settings;\n",
        "lib/core/send.js",
        "// send a request with the default request settings merged in\n"
        "function send(request, settings) { return request.send(settings); }\n",
    ),
    # `config` abbreviates "configuration".
    (
        "timeout configuration",
        "pkg/_config.py",
        "class Limits:\n    def __init__(self, connect=None, pool=None):\n"
        "        self.connect = connect\n",
        "pkg/_client.py",
        'def send(request, timeout=None):\n    """Send with the timeout configuration given."""\n'
        "    timeout = timeout or request.timeout  # per-request timeout configuration\n"
        "    return request.send(timeout)\n",
    ),
    # Two adjacent words name a compound stem.
    (
        "how does the test client send requests",
        "pkg/testclient.py",
        "class InProcess:\n    def get(self, url):\n        return self.app(url)\n",
        "pkg/transport.py",
        "def send(client, requests):\n"
        '    """The client sends the requests, a test of the client."""\n'
        "    return [client.send(request) for request in requests]\n",
    ),
    # "test" in "the test client" names `testclient.py`: it does not ask for the test suite,
    # which stays demoted below the project's own code.
    (
        "how does the test client simulate requests",
        "pkg/testclient.py",
        "class InProcess:\n    def get(self, url):\n        return self.app(url)\n",
        "tests/test_requests.py",
        "def test_client_simulates_requests(client):\n"
        '    """The test client simulates requests: how does it simulate them?"""\n'
        "    requests = [client.get('/') for _ in range(3)]  # simulate requests\n"
        "    assert all(r.status_code == 200 for r in requests)\n",
    ),
    # A dotted name spells the module's path.
    (
        "how std.fs.cwd opens the current working directory",
        "lib/std/fs.zig",
        'pub const cwd = Io.Dir.cwd;\npub const path = @import("fs/path.zig");\n',
        "lib/std/Io/Dir.zig",
        "/// Opens the current working directory of the process (cwd).\n"
        "pub fn cwd() Dir {\n    // current working directory, opened relative to cwd\n"
        "    return .{ .handle = cwd_handle() };\n}\n",
    ),
]


@pytest.mark.parametrize(("question", "answer", "text", "rival", "rival_text"), CASES)
def test_the_file_a_question_names_comes_first(
    make_repo: MakeRepo, question: str, answer: str, text: str, rival: str, rival_text: str
) -> None:
    root = make_repo({answer: text, rival: rival_text, "README.md": "A project.\n"})
    build_index(root, progress=False)
    assert Index.open(root).search(question, k=3)[0].path == answer


def test_dotted_names_name_the_last_directory_and_stem() -> None:
    dotted = parse_query("why does sympy.core.basic.Basic.atoms recurse").dotted
    assert names_module("sympy/core/basic.py", dotted)
    assert names_module("sympy/core/basic/__init__.py", dotted)
    assert not names_module("sympy/core/numbers.py", dotted)
    assert not names_module("basic.py", dotted)  # one part alone is too weak


def reference_path_match(path: str, question: str) -> float:
    """The path match written plainly, word by word (what `PathWords` precomputes)."""
    from indexer.index.tokens import path_terms, stem

    q = parse_query(question)
    parts = path.rsplit("/", 1)
    name = parts[-1].rsplit(".", 1)[0]
    directory = parts[0] if len(parts) == 2 else ""
    if name.lower() in ("index", "__init__", "mod", "init") and directory:
        directory, _, name = directory.rpartition("/")

    def named(word: str) -> bool:
        forms = {word, stem(word)}
        if forms & q.path_match_terms:
            return True
        return any(
            len(f) >= 4 and any(t.startswith(f) for t in q.path_match_prefixes) for f in forms
        )

    score = 0.0
    for words, weight in ((name, 1.0), (directory, 0.5)):
        terms = list(dict.fromkeys(path_terms(words))) if words else []
        if terms:
            score += weight * sum(1 for t in terms if named(t)) / len(terms)
    return min(score, 1.5)


def test_path_match_equals_the_word_by_word_definition(make_repo: MakeRepo) -> None:
    files = {path: text for _, path, text, rival, _ in CASES for path in (path, rival)}
    files.update({"pkg/configuration/utils.py": "x = 1\n", "src/index.ts": "export {}\n"})
    root = make_repo(files)
    build_index(root, progress=False)
    index = Index.open(root)
    questions = [case[0] for case in CASES] + ["util config", "configure the utilities"]
    for question in questions:
        words = PathWords(parse_query(question))
        for f, record in enumerate(index.files):
            got = path_match(index, f, parse_query(question), words)
            assert got == reference_path_match(record["path"], question), (question, record)


def test_files_share_their_directory_and_stem_ids(make_repo: MakeRepo) -> None:
    """The path table holds each directory's and each stem's words once, under one part id,
    for every file with that directory or stem; a word is one form id wherever it is."""
    root = make_repo(
        {
            "pkg/io/reader.py": "x = 1\n",
            "pkg/io/writer.py": "y = 2\n",
            "lib/reader.py": "z = 3\n",
            "reader/io.py": "w = 4\n",
        }
    )
    build_index(root, progress=False)
    index = Index.open(root)
    q = parse_query("reader of io")
    at = {record["path"]: f for f, record in enumerate(index.files)}
    scores = {p: path_match(index, f, q) for p, f in at.items()}
    table = index.path_table
    reader, writer, other, nested = (
        at[p] for p in ("pkg/io/reader.py", "pkg/io/writer.py", "lib/reader.py", "reader/io.py")
    )
    assert table.directory[reader] == table.directory[writer]  # pkg/io
    assert table.stem[reader] == table.stem[other] == table.directory[nested]  # reader
    assert table.stem[nested] != table.directory[reader]  # "io" alone is not "pkg/io"
    assert len(set(table.stem.tolist()) | set(table.directory.tolist())) == 5
    assert scores["pkg/io/reader.py"] > scores["lib/reader.py"] > scores["pkg/io/writer.py"]


def test_the_reranker_scores_files_at_once_as_one_by_one(make_repo: MakeRepo) -> None:
    """`PathTable.scores` over many files equals path_match file by file, in a fresh table
    and in one filled by other queries first, and in a process answering one command."""
    files = {path: text for _, path, text, rival, _ in CASES for path in (path, rival)}
    files.update({"pkg/configuration/utils.py": "x = 1\n", "src/index.ts": "export {}\n"})
    root = make_repo(files)
    build_index(root, progress=False)
    questions = [case[0] for case in CASES] + ["util config", "configure the utilities"]
    for one_shot in (False, True):
        index = Index.open(root, one_shot=one_shot)
        every = np.arange(len(index.files), dtype=np.int64)
        for question in questions:
            words = PathWords(parse_query(question))
            at_once = index.path_table.scores(words, every[::-1]).tolist()[::-1]
            paths = [record["path"] for record in index.files]
            assert at_once == [reference_path_match(p, question) for p in paths], question


PATH_WORDS = [
    "policies",
    "policy",
    "Policy",
    "flies",
    "fly",
    "classes",
    "parsing",
    "parsed",
    "HTTPServer",
    "oauth2",
    "test_client",
    "TestClient",
    "utils",
    "utility",
    "config",
    "configuration",
    "__init__",
    "index",
    "mod",
    "data-sets",
    "boxes",
    "watches",
    "rerun",
    "queries",
    "query",
]


@settings(max_examples=300, deadline=None)
@example(dirs=[], name="flies", ext=".py", question=["fly"])  # stem "fly": not in the path
@example(dirs=["queries"], name="index", ext=".ts", question=["query"])  # named by its dir
@given(
    dirs=st.lists(st.sampled_from(PATH_WORDS), max_size=3),
    name=st.sampled_from(PATH_WORDS),
    ext=st.sampled_from([".py", ".ts", ""]),
    question=st.lists(
        st.sampled_from([*PATH_WORDS, "the", "of", "utilities", "flying"]), min_size=1, max_size=6
    ),
)
def test_a_path_a_question_names_is_never_skipped(
    dirs: list[str], name: str, ext: str, question: list[str]
) -> None:
    """PathWords.may_name (the reranker's test before it makes a file's path forms) is False
    only for paths the question does not name at all."""
    path = "/".join([*dirs, name + ext])
    text = " ".join(question)
    if reference_path_match(path, text) > 0:
        assert PathWords(parse_query(text)).may_name(path), (path, text)


def test_threads_fill_and_read_one_path_table(make_repo: MakeRepo) -> None:
    """Searches in several threads fill one index's table at once: each gets the scores it
    would get alone."""
    files = {f"pkg/{d}/{name}.py": "x = 1\n" for d in ("io", "net", "db") for name in PATH_WORDS}
    root = make_repo(files)
    build_index(root, progress=False)
    questions = ["reader of io", "policy of the network", "configure utilities", "parsed queries"]
    index = Index.open(root)
    paths = [record["path"] for record in index.files]
    want = {q: [reference_path_match(p, q) for p in paths] for q in questions}
    every = np.arange(len(paths), dtype=np.int64)

    def score(question: str) -> list[float]:
        words = PathWords(parse_query(question))
        got: list[float] = []
        for start in range(0, len(every), 7):  # new files at every call
            got.extend(index.path_table.scores(words, every[start : start + 7]).tolist())
        return got

    with ThreadPoolExecutor(4) as pool:
        for question, got in zip(questions, pool.map(score, questions), strict=True):
            assert got == want[question], question


def test_one_shot_and_long_lived_searches_rank_paths_alike(make_repo: MakeRepo) -> None:
    """A process answering one command scores only the files `may_name` lets through; the
    answers are a long-lived process's, scores included."""
    files = {path: text for _, path, text, rival, _ in CASES for path in (path, rival)}
    files.update({"pkg/configuration/utils.py": "x = 1\n", "src/index.ts": "export {}\n"})
    root = make_repo(files)
    build_index(root, progress=False)
    questions = [case[0] for case in CASES] + ["util config", "configure the utilities"]
    assert answered_alike(root, questions) >= len(CASES)


def answered_alike(root: Path, questions: list[str]) -> int:
    """Asserts that a one-shot and a long-lived search give each question the same answers,
    scores included; returns how many questions had any."""
    found = 0
    for question in questions:
        answers = [
            [(r.path, r.start_line, r.score) for r in Index.open(root, one_shot=s).search(question)]
            for s in (False, True)
        ]
        assert answers[0] == answers[1], question
        found += bool(answers[0])
    return found


@given(
    dirs=st.lists(st.sampled_from([*PATH_WORDS, "Core", "pkg.v2"]), max_size=3),
    name=st.sampled_from([*PATH_WORDS, "__init__", "mod", "Index", "README"]),
    ext=st.sampled_from([".py", ".ts", ".tar.gz", ""]),
    written=st.lists(
        st.lists(st.sampled_from([*PATH_WORDS, "__init__", "Core", ".", ".."]), min_size=1),
        max_size=3,
    ),
    suffix=st.sampled_from([".py", ".ts", ""]),
)
@example(dirs=["sympy", "core"], name="basic", ext=".py", written=[["core", "basic"]], suffix=".py")
def test_a_file_a_query_names_holds_the_query_s_keys(
    dirs: list[str], name: str, ext: str, written: list[list[str]], suffix: str
) -> None:
    """The reranker tests written paths, dotted names and exact names only on files whose
    stem or module key the query holds (rerank.named_files): no file they name lacks it."""
    path = "/".join([*dirs, name + ext])
    named = tuple("/".join(parts) + suffix for parts in written)
    if names_path(path, named):
        assert stem_key(path) in written_stems(named), (path, named)
    dotted = tuple(tuple(p.lower() for p in parts) for parts in written)
    if names_module(path, dotted):
        assert module_key(path) in {w for parts in dotted for w in parts}, (path, dotted)
    idents = {p.lower() for parts in written for p in parts}
    if named_exactly(path, idents):
        assert stem_key(path) in idents


def test_one_shot_and_long_lived_searches_weigh_named_files_alike(make_repo: MakeRepo) -> None:
    """Written paths, dotted names and exact names: a long-lived process tests only the files
    whose keys the query holds, one answering a single command tests every file; the answers
    are the same, scores included."""
    files = {
        "pkg/core/basic.py": "class Basic:\n    def atoms(self):\n        return set()\n",
        "pkg/core/__init__.py": "from .basic import Basic\n",
        "pkg/printing/latex.py": "def latex(expr):\n    return str(expr)\n",
        "pkg/printing/printer.py": (
            "class Printer:\n    def doprint(self, expr):\n        return expr\n"
        ),
        "lib/SqlMapper.cs": "class SqlMapper { void Query() {} }\n",
        "tests/test_basic.py": "def test_atoms():\n    assert Basic().atoms() == set()\n",
    }
    root = make_repo(files)
    build_index(root, progress=False)
    questions = [
        "why does pkg.core.basic.Basic.atoms recurse",
        "latex printing fails, see pkg/printing/latex.py line 2",
        "SqlMapper",
        "Printer doprint",
        "error in printing/printer.py when printing expressions " * 8,  # a report
    ]
    assert answered_alike(root, questions) == len(questions)
