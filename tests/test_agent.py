"""Compression, token budgets and the savings log, on a real index through the API and CLI."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import Index, build_index
from indexer.errors import IndexerError
from indexer.search.budget import count_tokens, pack
from indexer.search.compress import compress, query_terms
from indexer.search.savings import LOG_NAME, flush
from indexer.search.savings_report import report, session_baseline

from .conftest import MakeRepo, run_cli

LONG_PY = '''"""Shipping rates."""


def shipping_cost(weight_kg: float, zone: str, express: bool = False) -> float:
    """Price of a parcel by weight and zone. Express doubles it.

    Longer explanation that compression leaves out.
    """
    base = 4.0
    rates = {"eu": 1.5, "us": 2.5, "asia": 3.0}
    per_kg = rates.get(zone, 5.0)
    surcharge = 0.0
    if weight_kg > 30:
        surcharge = 20.0
    total = base + per_kg * weight_kg + surcharge
    if express:
        total *= 2
    return round(total, 2)


class Warehouse:
    """Stock levels per product."""

    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def receive(self, sku: str, count: int) -> None:
        """Add delivered items."""
        self.stock[sku] = self.stock.get(sku, 0) + count

    def ship(self, sku: str, count: int) -> bool:
        if self.stock.get(sku, 0) < count:
            return False
        self.stock[sku] -= count
        return True
'''


@pytest.fixture
def shop(make_repo: MakeRepo) -> Path:
    root = make_repo({"shop/shipping.py": LONG_PY, "shop/__init__.py": ""})
    build_index(root, progress=False)
    return root


def test_compression_keeps_signature_docstring_and_marks_elisions(shop: Path) -> None:
    index = Index.open(shop)
    r = index.search("shipping_cost surcharge", k=1, compress=True, log=False)[0]
    text = r.text or ""
    # The name is on the next line; the header says how sure the result is.
    assert text.splitlines()[0] == f"## shop/shipping.py:4-18  [confidence {r.confidence:.2f}]"
    assert index.show("shop/shipping.py:4-18").id == r.id  # the location is a handle too
    assert index.show("shop/shipping.py:10").id == r.id  # a line inside it
    with pytest.raises(IndexerError, match="not an indexed file"):
        index.show("../etc/passwd:1-2")
    assert "def shipping_cost(weight_kg: float, zone: str, express: bool = False) -> float" in text
    assert '"""Price of a parcel by weight and zone."""' in text
    assert "surcharge" in text.split("\n", 3)[3]  # a body line that matters to the query
    assert "Longer explanation" not in text and "...L" in text
    full = index.show(r.id).text
    assert count_tokens(text) < count_tokens(full)

    cls = next(
        x for x in index.search("Warehouse", k=5, compress=True, log=False) if x.kind == "class"
    )
    assert "class Warehouse" in (cls.text or "")
    for member in ("def receive(self, sku: str, count: int) -> None", "def ship(self"):
        assert member in (cls.text or "")


def test_compress_marks_every_gap_with_file_lines(shop: Path) -> None:
    index = Index.open(shop)
    chunk = index.show(index.search("shipping_cost", k=1, log=False)[0].id)
    text = compress(chunk, query_terms("express"), max_kept=1)
    markers = [line.strip() for line in text.splitlines() if line.strip().startswith("...L")]
    assert markers and all(m[4:].replace("-", "").isdigit() for m in markers)
    assert markers[-1].endswith("-18")  # the last gap runs to the end of the function


def test_budget_is_never_exceeded(shop: Path) -> None:
    index = Index.open(shop)
    for budget in (20, 40, 80, 150, 400, 2000):
        packed = index.search_budget("warehouse stock shipping", budget, log=False)
        assert packed.tokens == count_tokens(packed.text) <= budget
        assert len(packed.items) + packed.omitted >= 1
    big = index.search_budget("warehouse stock shipping", 2000, log=False)
    assert big.items[0]["form"] == "full"
    with pytest.raises(IndexerError, match="budget"):
        index.search_budget("x", 5)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(min_size=0, max_size=300), min_size=1, max_size=12),
    st.integers(min_value=20, max_value=600),
)
def test_packing_respects_any_budget(texts: list[str], budget: int) -> None:
    entries = [({"rank": i}, t, t[: len(t) // 2], t[:20]) for i, t in enumerate(texts)]
    packed = pack(entries, budget)
    assert count_tokens(packed.text) == packed.tokens <= budget


def test_token_counts_are_real_bpe() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2  # o200k_base
    assert count_tokens("def retry_with_backoff(func, attempts=5):") > 5


def test_savings_log_counts_real_tokens_against_both_baselines(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INDEXER_SAVINGS", raising=False)
    monkeypatch.delenv("INDEXER_SESSION", raising=False)
    index = Index.open(shop)
    index_dir = index.snapshot.parent.parent
    index.search("shipping cost by zone", k=3)  # a library call writes nothing unless asked
    assert not (index_dir / LOG_NAME).exists()
    first = index.search("shipping cost by zone", k=3, log=True)
    second = index.search("express surcharge", k=3, log=True)  # the same file, same session
    proc = run_cli("search", "warehouse stock", "--budget", "200", cwd=shop)
    assert proc.returncode == 0, proc.stderr
    run_cli("search", "warehouse", "--no-log", cwd=shop)
    flush()  # the API's lines are counted on a background thread
    log = index_dir / LOG_NAME
    deadline = time.monotonic() + 30  # the CLI's line is counted by a detached child
    while len(log.read_text().splitlines()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = log.read_text().splitlines()
    assert sorted(json.loads(line)["source"] for line in lines) == ["api", "api", "cli"]
    assert "shipping" not in log.read_text()  # counts and hashes, never code or paths
    assert log.stat().st_mode & 0o777 == 0o600
    rep = report(index_dir).to_dict()
    sent_api = sum(count_tokens(json.dumps([r.to_dict() for r in rs])) for rs in (first, second))
    assert rep["tokens_sent"] == sent_api + count_tokens(proc.stdout)
    whole = count_tokens(LONG_PY)  # every search points into shipping.py only
    assert rep["tokens_baseline"] == 3 * whole  # upper bound: the file again for every query
    assert rep["tokens_baseline_session"] == 2 * whole  # honest: once per session (API, CLI)
    assert rep["sessions"] == 2
    assert rep["tokens_saved"] == 3 * whole - rep["tokens_sent"]
    assert rep["tokens_saved_session"] == 2 * whole - rep["tokens_sent"]
    assert "upper bound" in rep["baseline"] and "honest" in rep["baseline_session"]
    assert rep["usd"]["saved_as_input"] == round(rep["tokens_saved"] * 3.0e-6, 4)

    proc = run_cli("savings", "--json", "--price-input", "10", cwd=shop)
    data = json.loads(proc.stdout)
    assert data["queries"] == 3 and data["prices_usd_per_million"]["input"] == 10.0
    assert data["usd"]["saved_as_input"] == round(data["tokens_saved"] * 10e-6, 4)
    table = run_cli("savings", cwd=shop).stdout
    assert "files once per session (honest)" in table and "{" not in table
    assert f"{2 * whole:,}" in table and f"{3 * whole:,}" in table


def test_session_baseline_reads_each_file_once_per_session() -> None:
    hour = 3600.0
    searches = [
        ("mcp-1", 0.0, [("a.py", 100), ("b.py", 50)]),
        ("mcp-1", 10.0, [("a.py", 100)]),  # read before in this session: free
        ("mcp-1", 20.0, [("a.py", 120)]),  # the file changed: read again
        ("mcp-2", 30.0, [("a.py", 120)]),  # another session
        ("~cli", 40.0, [("b.py", 50)]),
        ("~cli", 50.0, [("b.py", 50)]),  # CLI searches minutes apart: one session
        ("~cli", 50.0 + hour, [("b.py", 50)]),  # an hour later: a new one
    ]
    assert session_baseline(searches) == (100 + 50 + 120 + 120 + 50 + 50, 4)


def test_savings_switches_and_unwritable_log(shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INDEXER_SAVINGS", raising=False)
    index = Index.open(shop)
    index_dir = index.snapshot.parent.parent
    assert run_cli("savings", "--off", cwd=shop).returncode == 0
    index.search("warehouse", log=True)
    assert not (index_dir / LOG_NAME).exists()
    assert run_cli("savings", "--on", cwd=shop).returncode == 0
    monkeypatch.setenv("INDEXER_SAVINGS", "0")
    index.search("warehouse", log=True)
    assert not (index_dir / LOG_NAME).exists()
    monkeypatch.delenv("INDEXER_SAVINGS")
    (index_dir / LOG_NAME).mkdir()  # cannot be appended to: searching still works
    assert index.search("warehouse", log=True)
    proc = run_cli("search", "warehouse", "--json", cwd=shop)
    assert proc.returncode == 0 and json.loads(proc.stdout)
    os.rmdir(index_dir / LOG_NAME)


def test_cli_compress_and_budget_json(shop: Path) -> None:
    proc = run_cli("search", "shipping cost", "--compress", "--json", "--no-log", cwd=shop)
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)
    assert items[0]["text"].startswith("## shop/shipping.py:")
    proc = run_cli("search", "shipping cost", "--budget", "60", "--json", "--no-log", cwd=shop)
    data = json.loads(proc.stdout)
    assert data["tokens"] <= 60 and data["budget"] == 60
    assert {i["form"] for i in data["results"]} <= {"full", "compressed", "reference"}
    proc = run_cli("search", "x", "--budget", "3", cwd=shop)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
