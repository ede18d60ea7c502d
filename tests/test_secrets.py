"""Secrets never leak: secret files are skipped, secret values redacted, through CLI, API and MCP,
in every artifact on disk, and in the savings log."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from indexer import Index, build_index
from indexer.index.build import update_index
from indexer.index.segment_format import TEXT_BLOCKS, TEXTS, decompress_texts
from indexer.search.savings import LOG_NAME, flush
from indexer.source import secrets
from indexer.source.gitsource import path_skip_reason
from indexer.source.secrets import is_secret_path, redact

from .conftest import MakeRepo, commit_all, run_cli, write_files
from .secret_fixtures import (
    AWS_KEY,
    GITHUB_TOKEN,
    KEYS_MODULE_PY,
    SECRET_VALUES,
    SETTINGS_PY,
    SIX_SECRET_FILES,
)

QUERIES = ("private key", "aws secret access key", "github token", "database password", "jwt")


def assert_no_secret(text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    for value in SECRET_VALUES:
        assert value.encode() not in data and value.lower().encode() not in data, value


@pytest.fixture
def six(make_repo: MakeRepo, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("INDEXER_SAVINGS", raising=False)
    root = make_repo(SIX_SECRET_FILES)
    build_index(root, progress=False)
    return root


def test_secret_names_are_skipped_whatever_their_type() -> None:
    for path in (
        ".env",
        "deploy/.env.production",
        "secrets.env.yaml",
        "server.pem",
        "tls/server.key",
        "certs/client.p12",
        "id_rsa",
        "id_rsa.txt",
        "home/.ssh/config",
        "id_ed25519.pub",
        "credentials.json",
        "config/credentials.ini",
        ".netrc",
        ".npmrc",
        ".pypirc",
        "release.keystore",
        "infra/terraform.tfstate",
    ):
        assert is_secret_path(path), path
        # Checked before language detection: a known extension never makes them indexable.
        assert path_skip_reason(path, 0o100644) == "secret", path
    for path in ("botocore/credentials.py", "app/secrets.ts", "keyboard.py", "docs/tokens.md"):
        assert not is_secret_path(path), path


def test_redaction_keeps_lines_and_is_idempotent() -> None:
    for content in (SETTINGS_PY, KEYS_MODULE_PY, *map(str, SIX_SECRET_FILES.values())):
        data = content.encode()
        redacted, _ = redact(data)
        assert_no_secret(redacted)
        assert redacted.count(b"\n") == data.count(b"\n")
        assert redact(redacted) == (redacted, {})
    redacted, counts = redact(SETTINGS_PY.encode())
    assert b'AWS_ACCESS_KEY_ID = "[REDACTED:aws_access_key]"' in redacted
    assert counts == {"aws_access_key": 1, "aws_secret_key": 1, "github_token": 1, "password": 1}
    # Ordinary code is left alone.
    for line in (
        b"token = token[2:]\n",
        b'password_field = "password_confirmation"\n',
        b'TOKEN_URL = "https://oauth2.example.com/token"\n',
        b"def get_secret(name): return vault[name]\n",
        b'api_key = os.environ["API_KEY"]\n',
        b'PEM_HEADER = "-----BEGIN RSA PRIVATE KEY-----"\n',
    ):
        assert redact(line) == (line, {}), line


def test_six_secret_files_return_no_value_through_cli_api_and_artifacts(six: Path) -> None:
    index = Index.open(six)
    status = index.status()
    assert status["counts"]["skipped"]["secret"] == 7
    assert status["counts"]["redacted"]["private_key"] == 1
    outputs: list[str] = []
    for query in QUERIES:
        results = index.search(query, k=20, with_text=True)
        outputs += [json.dumps([r.to_dict() for r in results])]
        outputs += [index.show(r.id).text for r in results]
        outputs.append(index.search_budget(query, 2000).text)
        for args in (["--text", "--json"], ["--text"], ["--compress"], ["--budget", "3000"]):
            proc = run_cli("search", query, "--repo", str(six), "-k", "20", *args)
            assert proc.returncode == 0, proc.stderr
            outputs.append(proc.stdout)
    assert any("[REDACTED:aws_access_key]" in out for out in outputs)
    assert any("sign_payload" in out for out in outputs)  # the code itself is still found
    for out in outputs:
        assert_no_secret(out)
    proc = run_cli("status", "--repo", str(six))
    assert "redacted" in proc.stdout and "secret 7" in proc.stdout
    # Nothing on disk holds a value either: snapshots, BM25 vocabulary, blob cache, savings log.
    flush()
    for path in (six / ".git" / "indexer").rglob("*"):
        if path.is_file():
            assert_no_secret(path.read_bytes())
        if path.name == TEXTS:  # compressed chunk texts: their plain content too
            blocks = np.load(path.parent / TEXT_BLOCKS, allow_pickle=False)
            assert_no_secret(decompress_texts(path.read_bytes(), blocks))
        if path.name.endswith(".gz"):
            assert_no_secret(gzip.decompress(path.read_bytes()))


def test_savings_log_holds_counts_and_hashes_only(six: Path) -> None:
    index = Index.open(six)
    index.search("private key signing", k=5, log=True)  # a library call logs when asked
    flush()
    log = six / ".git" / "indexer" / LOG_NAME
    line = json.loads(log.read_text().splitlines()[-1])
    assert line["sent_tokens"] > 0 and len(line["sent_sha256"]) == 64
    assert all(len(path_hash) == 16 for path_hash, _ in line["files"])
    assert "app/keys.py" not in log.read_text() and "sign_payload" not in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600


def test_an_old_savings_log_with_text_is_rewritten_without_it(six: Path) -> None:
    import base64
    import zlib

    log = six / ".git" / "indexer" / LOG_NAME
    sent = "## app/keys.py:14-16 sign_payload\n"
    old = {
        "v": 1,
        "source": "cli",
        "repo": str(six),
        "sent": base64.b64encode(zlib.compress(sent.encode())).decode(),
        "files": [["app/keys.py", Index.open(six).blob_of["app/keys.py"]]],
    }
    log.write_text(json.dumps(old) + "\n")
    log.chmod(0o644)
    proc = run_cli("savings", "--json", "--repo", str(six))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tokens_sent"] > 0
    assert "sign_payload" not in log.read_text() and "app/keys.py" not in log.read_text()
    assert log.stat().st_mode & 0o777 == 0o600


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _mcp_outputs(repo: Path) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "indexer", "mcp", "--repo", str(repo)]
    )
    outputs: list[str] = []
    async with Client(params) as client:
        for query in QUERIES:
            for args in ({"compress": True}, {"compress": False}, {"budget": 3000}):
                result = await client.call_tool("search", {"query": query, "k": 20, **args})
                outputs.append(_text(result))
        for line in outputs[0].splitlines():
            if line.startswith("## "):
                location = line.split()[1]
                outputs.append(_text(await client.call_tool("show", {"chunk_id": location})))
        for path in ("app/settings.py", "app/keys.py", "credentials.json", ".env", "id_rsa.txt"):
            result = await client.call_tool("retrieve", {"path": path, "start_line": 1})
            outputs.append(_text(result))
    return outputs


def test_mcp_search_show_and_retrieve_return_the_redacted_form(six: Path) -> None:
    outputs = anyio.run(_mcp_outputs, six)
    joined = "\n".join(outputs)
    assert '"[REDACTED:aws_access_key]"' in joined  # retrieve of settings.py
    assert "not an indexed file" in joined  # credentials.json, .env, id_rsa.txt
    for out in outputs:
        assert_no_secret(out)


def test_indexerignore_excludes_more_and_reincludes_a_false_positive(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "app/main.py": "def main():\n    return 1\n",
            "generated/big.py": "def generated_helper():\n    return 2\n",
            "config/credentials.json": '{"note": "public test fixture, no secret here"}\n',
            ".indexerignore": "generated/\n!config/credentials.json\n",
        }
    )
    report = build_index(root, progress=False)
    assert report.skipped == {"ignored": 1}
    index = Index.open(root)
    paths = {f["path"] for f in index.files}
    assert paths == {"app/main.py", "config/credentials.json", ".indexerignore"}
    # Rules come from the commit: dropping the re-include makes the file a secret again.
    write_files(root, {".indexerignore": "generated/\n"})
    commit_all(root, "stricter")
    report = update_index(root, progress=False)
    assert report.skipped == {"ignored": 1, "secret": 1}


def test_updates_and_the_blob_cache_redact_too(make_repo: MakeRepo) -> None:
    root = make_repo({"app/billing.py": "def total(lines):\n    return sum(lines)\n"})
    build_index(root, progress=False)
    write_files(root, {"app/settings.py": SETTINGS_PY})
    commit_all(root, "settings")
    report = update_index(root, progress=False)
    assert report.mode == "incremental" and report.redacted["aws_access_key"] == 1
    text = Index.open(root).search(AWS_KEY[:8] + " aws access key", k=5, with_text=True)
    assert text and all(GITHUB_TOKEN not in (r.text or "") for r in text)
    # A move is served from the blob cache, still redacted and still counted.
    (root / "conf").mkdir()
    (root / "app" / "settings.py").rename(root / "conf" / "settings.py")
    repo_index = pygit2.Repository(str(root)).index
    repo_index.remove("app/settings.py")
    repo_index.write()
    commit_all(root, "rename")
    report = update_index(root, progress=False)
    assert report.cached_files == 1 and report.redacted["github_token"] == 1
    for path in (root / ".git" / "indexer").rglob("*"):
        if path.is_file() and path.name != LOG_NAME:
            assert_no_secret(path.read_bytes())


PIECES = [
    *("password", "PASSWD", "pwd", "Secret", "token", "API_KEY", "apikey", "access_key"),
    *("accessKey", "private_key", "PrivateKey", "export", "my_", "db.", "-x", " ", "  ", "\t"),
    *("\n", "\n\n", "=", ":", ":=", "=>", '"', "'", "#", ";", "abc123XYZ9", "hunter2two"),
    *("Zq9wE7rT5yU3", "[REDACTED:password]", "${X}", "x"),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60))
def test_password_rules_tried_where_they_can_start_equal_a_full_scan(pieces: list[str]) -> None:
    """The password rules try only the positions where a match may begin (a key word, or the
    start of its line): exactly what `pattern.sub` over every position gives."""
    data = "".join(pieces).encode()
    for rule in secrets.RULES:
        starts = secrets._STARTS.get(rule[1])
        if starts is None:
            continue
        fast: dict[str, int] = {}
        full: dict[str, int] = {}
        assert secrets._apply(rule, data, fast, starts(data)) == secrets._apply(rule, data, full)
        assert fast == full


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [*(t.decode() for t in secrets.TRIGGERS), "AKIA", "Ghp_", "a", "g", "\n", " ", "x_"]
        ),
        max_size=40,
    )
)
def test_candidate_lines_are_the_lines_holding_a_trigger(pieces: list[str]) -> None:
    """However the triggers are searched for, the lines the rules run on are those that hold
    one (merged as before)."""
    data = "".join(pieces).encode()
    expected: list[tuple[int, int]] = []
    start = 0
    for line in data.split(b"\n"):
        end = start + len(line)
        if any(t in line.lower() for t in secrets.TRIGGERS):
            if expected and start <= expected[-1][1] + secrets.MERGE_GAP:
                expected[-1] = (expected[-1][0], end)
            else:
                expected.append((start, end))
        start = end + 1
    assert secrets._candidate_lines(data) == expected
