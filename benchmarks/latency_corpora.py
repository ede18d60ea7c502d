"""The latency bench's corpora and queries (benchmarks/bench_latency.py): sympy 1.5, and "big"
(sympy 1.5 + Django 5.1.4 + the .py files of three wheels), each committed into a bare git
repository and indexed once; three kinds of queries per index."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

SHORT_QUESTIONS = [
    "solve a system of linear equations",
    "how is the determinant of a matrix computed",
    "simplify trigonometric expressions",
    "latex printing of integrals",
    "where are symbol assumptions like positive checked",
    "series expansion around a point",
    "prime factorization of an integer",
    "lambdify with a numpy backend",
    "hints for solving ordinary differential equations",
    "pretty printer with unicode characters",
    "how are rational numbers normalised",
    "gcd of polynomials",
    "parse a string into an expression",
    "limits at infinity",
    "integrate rational functions",
    "code generation to C",
    "how are database migrations applied",
    "url routing and reverse resolution",
    "csrf token validation middleware",
    "fit a random forest classifier",
    "sparse matrix multiplication",
    "attention mask for a transformer model",
    "tokenizer padding and truncation",
    "cross validation splitting",
]

BIG_WHEELS = ["scikit-learn==1.5.2", "scipy==1.14.1", "transformers==4.46.3"]


def wheel_sources(spec: str, work: Path) -> Path:
    """The .py files of a wheel, unpacked under WORK/src/wheels/NAME (no build needed)."""
    name = spec.split("==")[0]
    out = work / "src" / "wheels" / name
    if out.is_dir():
        return out
    dl = work / "wheels"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"),
            *(
                "--python-version",
                "3.11",
                "--platform",
                "manylinux2014_x86_64",
                spec,
                "-d",
                str(dl),
            ),
        ],
        check=True,
    )
    wheel = next(p for p in dl.glob("*.whl") if p.name.lower().startswith(name.replace("-", "_")))
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(".py") and ".dist-info" not in member:
                archive.extract(member, out)
    return out


def corpus(name: str, work: Path, trees: Path | None) -> tuple[Path, Path]:
    """(source tree, bare git repository) of a corpus."""
    import shutil

    from bench_core import sdist_tree

    from indexer.eval.evaluate import commit_tree

    sympy = sdist_tree("sympy==1.5", work, trees)
    if name == "sympy":
        tree = sympy
    else:
        tree = work / "staging" / "big"
        if not tree.is_dir():
            parts = [sympy, sdist_tree("django==5.1.4", work, None)]
            parts += [wheel_sources(spec, work) for spec in BIG_WHEELS]
            for part in parts:
                shutil.copytree(part, tree / part.name, dirs_exist_ok=True)
    git_dir = work / "repos" / f"{name}.git"
    if not (git_dir / "HEAD").exists():
        commit_tree(tree, git_dir)
    return tree, git_dir


def drop_cached(*dirs: Path) -> None:
    """Drop the files of `dirs` from the page cache (the clean pages no process maps), so each
    system reads its index as a server does after a reboot, whatever earlier runs left cached:
    how the pages came in decides their folios, and so how many faults a read takes (one-shot
    CLIs' preads and default faults bring 4-64 KB folios back; a long-lived process's reads of
    the 8-bit codes, 2 MB ones). Semble holds its index in memory."""
    if not hasattr(os, "posix_fadvise"):
        return
    for directory in dirs:
        for path in directory.rglob("*"):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


# The installed libraries an index's bytes depend on (chunking, codes, the vocabulary's order):
# an upgrade of one of them makes the same checkout build another index.
BUILD_LIBRARIES = ("numpy", "faiss-cpu", "pygit2", "tree-sitter", "tree-sitter-language-pack")


def library_versions() -> str:
    """`name==version` of each BUILD_LIBRARIES (`-` where missing), and Python's version."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "-"

    found = [f"{name}=={installed(name)}" for name in BUILD_LIBRARIES]
    return " ".join([f"python=={platform.python_version()}", *found])


def source_stamp(src: Path) -> dict[str, str | None]:
    """What identifies the code of checkout `src`: its commit (None outside git), a digest
    of its package and artifacts (uncommitted edits included), and the libraries it builds
    with (this process's: the bench runs every checkout with the same ones)."""
    digest = hashlib.sha256()
    for path in sorted([*(src / "indexer").rglob("*.py"), *(src / "artifacts").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes())
    head = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    commit = head.stdout.strip() if head.returncode == 0 else None
    return {"commit": commit, "digest": digest.hexdigest()[:16], "libraries": library_versions()}


def ensure_index(
    git_dir: Path,
    index_dir: Path,
    env: dict[str, str] | None = None,
    src: Path | None = None,
    reuse: bool = False,
) -> dict[str, str | None]:
    """Build `index_dir` with the code of `src` (default: this checkout) unless it exists and
    that code built it (`reuse`: any existing index); what built it (recorded beside it: an
    index an older checkout built, with another segment layout, must not stand for this one's)."""
    from bench_core import build

    stamp_file = index_dir.parent / f"{index_dir.name}.built-by.json"
    recorded = json.loads(stamp_file.read_text()) if stamp_file.exists() else None
    if (index_dir / "CURRENT").exists() and reuse:
        return recorded or {"commit": None, "digest": None}
    wanted = source_stamp(src or Path(__file__).resolve().parents[1])
    if (index_dir / "CURRENT").exists() and recorded == wanted:
        return wanted
    shutil.rmtree(index_dir, ignore_errors=True)
    build(git_dir, index_dir, env)
    stamp_file.write_text(json.dumps(wanted))
    return wanted


def query_sets(index_dir: Path, devset: Path) -> dict[str, list[str]]:
    from indexer.api import Index
    from indexer.index.store import current_snapshot

    index = Index(current_snapshot(index_dir))
    rng = random.Random(0)
    rows = rng.sample(range(len(index)), min(len(index), 4000))
    symbols: list[str] = []
    for row in rows:
        chunk = index.chunk_at(row, with_text=False)
        if (
            chunk.kind in ("function", "method", "class")
            and len(chunk.symbol) >= 6
            and chunk.symbol not in symbols
            and not chunk.symbol.startswith("test")
        ):
            symbols.append(chunk.symbol)
        if len(symbols) == 20:
            break
    issues = [
        json.loads(line)["query"]
        for line in (devset / "instances.jsonl").read_text().splitlines()
        if line.strip() and json.loads(line)["repo"] == "sympy/sympy"
    ][:20]
    return {"identifier": symbols, "question": SHORT_QUESTIONS, "issue": issues}


def varied_queries(index_dir: Path, devsets: list[Path], count: int) -> list[str]:
    """`count` queries as a long-lived server meets them (for its memory after many searches):
    every dev-set query (short questions, whole reports) and identifiers sampled from the
    index, shuffled with a fixed seed."""
    from indexer.api import Index
    from indexer.index.store import current_snapshot

    texts = [
        json.loads(line)["query"]
        for devset in devsets
        for line in (devset / "instances.jsonl").read_text().splitlines()
        if line.strip()
    ]
    index = Index(current_snapshot(index_dir))
    rng = random.Random(1)
    symbols: list[str] = []
    for row in rng.sample(range(len(index)), min(len(index), 3 * count)):
        symbol = index.chunk_at(row, with_text=False).symbol
        if len(symbol) >= 6:
            symbols.append(symbol)
        if len(texts) + len(symbols) >= count:
            break
    queries = (texts + symbols)[:count]
    rng.shuffle(queries)
    return queries
