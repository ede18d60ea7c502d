"""Real git repositories made with pygit2 in a temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

# A CLI search starts a background server for the next one by default (INDEXER_SERVE=auto):
# the tests' own CLI processes only forward to servers a test starts (tests/test_serve.py
# checks the default itself), so no test leaves servers behind.
os.environ["INDEXER_SERVE"] = "on"

SIGNATURE = pygit2.Signature("Test Author", "author@example.com", 1_700_000_000, 0)


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def commit_all(root: Path, message: str = "commit", when: int | None = None) -> str:
    repo = pygit2.Repository(str(root))
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    sig = (
        SIGNATURE
        if when is None
        else pygit2.Signature("Test Author", "author@example.com", when, 0)
    )
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("HEAD", sig, sig, message, tree, parents))


def git(root: Path, *args: str) -> str:
    """The real `git` in `root` (what users run beside the index)."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def diverge(root: Path, path: str, old: str, ours: str, theirs: str) -> None:
    """Branch `other` replaces `old` in `path` by `theirs`, the current branch by `ours`: a
    `git merge other` then stops with conflict markers in the file."""
    original = (root / path).read_text(encoding="utf-8")
    git(root, "checkout", "-q", "-b", "other")
    (root / path).write_text(original.replace(old, theirs), encoding="utf-8")
    commit_all(root, "theirs")
    git(root, "checkout", "-q", "-")
    (root / path).write_text(original.replace(old, ours), encoding="utf-8")
    commit_all(root, "ours")


MakeRepo = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    counter = iter(range(1000))

    def make(files: dict[str, str | bytes]) -> Path:
        root = tmp_path / f"repo{next(counter)}"
        root.mkdir()
        pygit2.init_repository(str(root))
        write_files(root, files)
        commit_all(root, "initial")
        return root

    return make


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real `python -m indexer` process, as a user or an agent runs it."""
    return subprocess.run(
        [sys.executable, "-m", "indexer", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


PYTHON_BILLING = '''"""Billing helpers."""
import decimal
from typing import Iterable

TAX_RATE = decimal.Decimal("0.2")
CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$"}


class InvoiceCalculator:
    """Adds up invoice lines and applies tax."""

    rounding = decimal.ROUND_HALF_UP

    def __init__(self, lines: Iterable[tuple[str, decimal.Decimal]]) -> None:
        self.lines = list(lines)

    def subtotal(self) -> decimal.Decimal:
        """Sum of all line amounts before tax."""
        return sum((amount for _, amount in self.lines), decimal.Decimal(0))

    def total_with_tax(self) -> decimal.Decimal:
        return (self.subtotal() * (1 + TAX_RATE)).quantize(decimal.Decimal("0.01"))


def format_money(amount: decimal.Decimal, currency: str) -> str:
    return f"{CURRENCY_SYMBOLS.get(currency, currency)}{amount:,.2f}"
'''

PYTHON_NET = '''import socket
import time


def retry_with_backoff(func, attempts=5, base_delay=0.5):
    """Call func again after an exception, sleeping twice as long each time."""
    for attempt in range(attempts):
        try:
            return func()
        except OSError:
            time.sleep(base_delay * 2 ** attempt)
    raise RuntimeError("gave up")


def open_tcp_connection(host: str, port: int) -> socket.socket:
    return socket.create_connection((host, port), timeout=10)
'''

JS_CART = """// Shopping cart for the storefront.
const DEFAULT_CURRENCY = "EUR";

class ShoppingCart {
  constructor() {
    this.items = [];
  }
  addItem(sku, quantity) {
    this.items.push({ sku, quantity });
  }
}

const emptyCart = () => new ShoppingCart();

function parseQueryString(query) {
  return Object.fromEntries(new URLSearchParams(query));
}

module.exports = { ShoppingCart, emptyCart, parseQueryString };
"""

GO_SERVER = """package server

import "net/http"

type HealthChecker struct {
	ready bool
}

// ServeHTTP reports whether the service is ready.
func (h *HealthChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ready {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}
"""

RUST_LIB = """pub struct RingBuffer<T> {
    items: Vec<Option<T>>,
    head: usize,
}

impl<T> RingBuffer<T> {
    pub fn push_overwrite(&mut self, item: T) {
        let len = self.items.len();
        self.items[self.head % len] = Some(item);
        self.head += 1;
    }
}
"""

README = """# Storefront

Some prose about the project.

## Installing

Run the installer script and configure the payment provider.
"""

SAMPLE_FILES: dict[str, str | bytes] = {
    "billing/invoice.py": PYTHON_BILLING,
    "net/retry.py": PYTHON_NET,
    "web/cart.js": JS_CART,
    "server/health.go": GO_SERVER,
    "src/ring.rs": RUST_LIB,
    "README.md": README,
    ".gitignore": "ignored_secret.py\n",
}


@pytest.fixture
def sample_repo(make_repo: MakeRepo) -> Path:
    root = make_repo(SAMPLE_FILES)
    # Untracked and ignored: must never be indexed.
    (root / "ignored_secret.py").write_text("def leaked_password_function():\n    pass\n")
    (root / "untracked_draft.py").write_text("def untracked_draft_function():\n    pass\n")
    return root


def live_segment(repo: Path) -> Path:
    """The directory of the first live segment of a repository's index (a fresh build has one)."""
    from indexer.index.store import current_generation

    index_dir = repo / ".git" / "indexer"
    generation = json.loads(current_generation(index_dir).read_text())
    return index_dir / "segments" / generation["segments"][0]["name"]
