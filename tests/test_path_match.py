"""A question names a file the way people write: plurals, abbreviations, compounds, dotted names."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from indexer import Index, build_index
from indexer.search.path_names import PathWords, names_module, path_match
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


def test_files_share_their_directory_and_stem_word_forms(make_repo: MakeRepo) -> None:
    """The per-file path cache holds shared objects: a directory's forms once for all its
    files, a stem's once for every directory it is in (one copy per file was 7 MB at 163k
    chunks)."""
    root = make_repo(
        {"pkg/io/reader.py": "x = 1\n", "pkg/io/writer.py": "y = 2\n", "lib/reader.py": "z = 3\n"}
    )
    build_index(root, progress=False)
    index = Index.open(root)
    q = parse_query("reader of io")
    at = {record["path"]: f for f, record in enumerate(index.files)}
    for f in at.values():
        path_match(index, f, q)
    cache = index.path_term_cache
    reader, writer, other = (
        cache[at[p]] for p in ("pkg/io/reader.py", "pkg/io/writer.py", "lib/reader.py")
    )
    assert reader is not None and writer is not None and other is not None
    assert reader[2] is writer[2] and reader[3] is writer[3]  # pkg/io
    assert reader[0] is other[0] and reader[1] is other[1]  # reader
    # A one-word part's union is its word's forms; a word is one object wherever it is.
    assert reader[1] is reader[0][0] and other[2][0] is other[3]
    nested = make_repo({"reader/io.py": "x = 1\n"})
    build_index(nested, progress=False)
    again = Index.open(nested)
    path_match(again, 0, q)
    in_directory = again.path_term_cache[0]
    assert in_directory is not None and in_directory[2][0] is reader[0][0]  # "reader" again
    assert path_match(index, at["pkg/io/reader.py"], q) > path_match(index, at["lib/reader.py"], q)


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
