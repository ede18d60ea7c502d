"""Data and configuration files (indexer/source/datafiles.py, ranking in indexer/search/):
large data by shape, small configuration as it is, both below code unless the query asks
for them."""

from __future__ import annotations

import json
from pathlib import Path

from indexer import Index, build_index
from indexer.source.chunker import chunk_file
from indexer.source.datafiles import SUMMARY_BYTES

from .conftest import run_cli

CI_YAML = """name: CI
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.11", "3.12", "3.13"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - run: pip install -e .[dev] && pytest -q
"""

RETRY_PY = '''"""Retries for flaky network calls."""
import time


def retry_with_backoff(call, attempts=5, base_delay=0.1):
    """Call `call` until it succeeds, sleeping exponentially longer between retries."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(base_delay * 2**attempt)
    return call()
'''


def large_fixture() -> str:
    """A recorded-responses fixture that repeats the words a question about retries uses."""
    records = [
        {"id": i, "event": "retry", "backoff_seconds": 0.1 * 2**i, "status": "retry with backoff"}
        for i in range(400)
    ]
    return json.dumps({"version": 2, "source": "recorded", "responses": records}, indent=2)


def test_a_large_json_file_becomes_one_shape_chunk() -> None:
    data = large_fixture().encode()
    assert len(data) > SUMMARY_BYTES["json"]
    [chunk] = chunk_file("tests/fixtures/responses.json", "json", "b", data)
    assert chunk.kind == "data" and (chunk.start_line, chunk.end_line) == (1, data.count(b"\n") + 1)
    assert chunk.signature.startswith("JSON object, 3 keys")
    assert "keys: version, source, responses" in chunk.text
    assert "responses: list[400] of {id: int, event: str, backoff_seconds: float" in chunk.text
    assert '{"version": 2}' in chunk.text  # first records
    assert len(chunk.text) < 2000


def test_small_configuration_is_kept_as_it_is() -> None:
    chunks = chunk_file(".github/workflows/ci.yml", "yaml", "b", CI_YAML.encode())
    assert [c.kind for c in chunks] == ["text"] and chunks[0].text == CI_YAML.rstrip("\n")
    small = chunk_file("package.json", "json", "b", b'{"name": "x", "version": "1.0.0"}\n')
    assert [c.kind for c in small] == ["text"]


def test_a_large_yaml_file_lists_its_keys() -> None:
    lines = ["defaults:", "  timeout: 30", "  retries: 3", "servers:"]
    lines += [f"  - name: host{i}\n    port: {8000 + i}" for i in range(1500)]
    [chunk] = chunk_file("deploy/inventory.yaml", "yaml", "b", "\n".join(lines).encode())
    assert chunk.kind == "data"
    assert "keys: defaults, servers" in chunk.text
    assert "defaults: timeout, retries" in chunk.text
    assert "first lines:" in chunk.text and "host1499" not in chunk.text


def test_a_csv_table_is_summarised_by_columns() -> None:
    rows = ["ra,dec,name,flux"] + [f"{i * 0.5},{-i * 0.25},star{i},{i}" for i in range(300)]
    [chunk] = chunk_file("data/stars.csv", "csv", "b", "\n".join(rows).encode())
    assert chunk.kind == "data"
    assert chunk.signature.startswith("CSV table, 300 rows, 4 columns")
    assert "columns: ra: float, dec: float, name: str, flux: int" in chunk.text
    tsv = chunk_file("data/small.tsv", "tsv", "b", b"a\tb\n1\t2\n")
    assert [c.kind for c in tsv] == ["text"]  # a few rows: kept as they are


def test_a_large_file_that_does_not_parse_keeps_its_windows() -> None:
    data = large_fixture().encode()[:-10]  # truncated JSON
    chunks = chunk_file("dump.json", "json", "b", data)
    assert len(chunks) > 1 and {c.kind for c in chunks} == {"text"}


def test_data_and_configuration_rank_below_code_unless_asked(make_repo) -> None:  # type: ignore[no-untyped-def]
    repo: Path = make_repo(
        {
            "net/retry.py": RETRY_PY,
            "net/settings.json": json.dumps({"retry": {"attempts": 5, "backoff": 0.1}}),
            "tests/fixtures/responses.json": large_fixture(),
            ".github/workflows/ci.yml": CI_YAML,
            "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {}}),
            "app/main.py": "def main():\n    print('python versions')\n",
        }
    )
    report = build_index(repo, progress=False)
    assert report.skipped.get("generated") == 1  # lock files stay skipped
    index = Index.open(repo)
    verified = run_cli("verify", cwd=repo)  # the shape chunk is re-derived from the blob
    assert verified.returncode == 0, verified.stderr

    def top(query: str, k: int = 3) -> list[str]:
        return [r.path for r in index.search(query, k=k, log=False)]

    assert top("where are retries with backoff handled")[0] == "net/retry.py"
    assert top("which Python versions does CI test")[0] == ".github/workflows/ci.yml"
    # Naming the file, or asking for fixtures, lifts it above the code's second chunk.
    assert top("attempts and backoff of the retry") == ["net/retry.py"] * 2 + ["net/settings.json"]
    assert top("attempts and backoff of the retry in settings.json")[1] == "net/settings.json"
    assert "tests/fixtures/responses.json" not in top("recorded retry responses", k=5)
    # ("fixture" also names the `fixtures/` directory, which may put the fixture first)
    assert "tests/fixtures/responses.json" in top("fixture of recorded retry responses")[:2]
