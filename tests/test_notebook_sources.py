"""Jupyter notebooks indexed as cells (indexer/source/notebook.py): real notebooks, real builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer import Index, build_index
from indexer.index.build import update_index
from indexer.search.budget import count_tokens
from indexer.search.savings import flush
from indexer.search.savings_report import report
from indexer.serve.mcp_server import Service
from indexer.source.chunker import chunk_file, chunk_records
from indexer.source.languages import is_code
from indexer.source.notebook import fallback_reason, sources_text

from .conftest import commit_all, run_cli, write_files

DATA = Path(__file__).parent / "data" / "notebooks"
JSON_NOISE = ('"source"', '"cell_type"', "execution_count", "iVBOR", '"outputs"')


def notebook(name: str) -> bytes:
    return (DATA / name).read_bytes()


# Cut off mid-file, as an interrupted save leaves it: not JSON. Made here rather than committed,
# so that this repository's own index holds no invalid notebook.
TRUNCATED = notebook("pricing.ipynb")[:1000]


def test_python_notebook_cells_are_chunked_like_modules() -> None:
    chunks = chunk_file("pricing.ipynb", "notebook", "b", notebook("pricing.ipynb"))
    by_name = {c.qualname: c for c in chunks}
    discount = by_name["apply_discount"]
    assert (discount.kind, discount.language, discount.cell) == ("function", "python", 3)
    assert (discount.start_line, discount.end_line) == (1, 3)  # lines within the cell
    assert discount.docstring == "Reduce a total by a percentage."
    assert by_name["Basket"].kind == "class" and by_name["Basket.total"].kind == "method"
    assert by_name["<cell 2>"].kind == "cell" and "VAT_RATE = 0.2" in by_name["<cell 2>"].text
    sections = [c for c in chunks if c.kind == "section"]
    assert [(s.symbol, s.cell, s.language) for s in sections] == [
        ("Pricing analysis", 1, "markdown"),
        ("Results", 4, "markdown"),
    ]
    assert not [c for c in chunks if any(noise in c.text for noise in JSON_NOISE)]
    assert "25.5" not in " ".join(c.text for c in chunks)  # outputs are dropped


def test_r_kernel_notebook_keeps_cells_in_r() -> None:
    chunks = chunk_file("survival_r.ipynb", "notebook", "b", notebook("survival_r.ipynb"))
    code = [c for c in chunks if c.cell in (2, 3)]
    assert {c.language for c in code} == {"r"}
    assert any("fit_curve <- function(data, group)" in c.text for c in code)
    if not is_code("r"):  # no R grammar: each cell is a text window
        assert [(c.kind, c.cell) for c in code] == [("cell", 2), ("cell", 3)]
    assert not [c for c in chunks if any(noise in c.text for noise in JSON_NOISE)]


def test_real_notebook_with_outputs_and_images_indexes_only_sources() -> None:
    data = notebook("nbformat_test4.ipynb")  # from the nbformat sdist: HTML, JS and PNG outputs
    assert b"iVBOR" in data
    chunks = chunk_file("test4.ipynb", "notebook", "b", data)
    assert {c.cell for c in chunks} == set(range(1, 10))
    assert any(c.kind == "section" and c.symbol == "nbconvert latex test" for c in chunks)
    assert any('print("hello")' in c.text and c.language == "python" for c in chunks)
    assert not [c for c in chunks if any(noise in c.text for noise in JSON_NOISE)]
    assert max(len(c.text) for c in chunks) < 1000  # the 13 KB image is gone


def test_a_notebook_with_big_outputs_is_not_skipped(make_repo) -> None:  # type: ignore[no-untyped-def]
    nb = json.loads(notebook("pricing.ipynb"))
    image = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"image/png": "iVBOR" * 300_000},
    }
    nb["cells"][1]["outputs"] = [image]  # a 1.5 MB line near the top: not minified, not too big
    repo = make_repo({"pricing.ipynb": json.dumps(nb)})
    report = build_index(repo, progress=False)
    assert report.skipped == {} and report.files == 1
    assert Index.open(repo).show("pricing.ipynb#cell=3").qualname == "apply_discount"


def test_nbformat_3_notebook_reads_worksheets() -> None:
    chunks = chunk_file("test3.ipynb", "notebook", "b", notebook("nbformat_test3.ipynb"))
    assert any(c.kind == "section" and c.symbol == "nbconvert latex test" for c in chunks)
    assert any(c.kind == "cell" and 'print("hello")' in c.text for c in chunks)
    assert not [c for c in chunks if any(noise in c.text for noise in JSON_NOISE)]


@pytest.mark.parametrize(
    "data",
    [
        b"[1, 2, 3]",
        b'{"cells": "not a list"}',
        b'{"cells": [1]}',
        b'{"cells": [{"cell_type": "code", "source": 7}]}',
        TRUNCATED,
    ],
)
def test_json_that_is_not_a_notebook_falls_back_to_text(data: bytes) -> None:
    records = chunk_records("x", "notebook", data)
    assert records and all(r["kind"] == "text" and "cell" not in r for r in records)
    assert fallback_reason("notebook", records) == "invalid_notebook"


@pytest.fixture
def notebook_repo(make_repo) -> Path:  # type: ignore[no-untyped-def]
    repo: Path = make_repo(
        {
            "analysis/pricing.ipynb": notebook("pricing.ipynb"),
            "analysis/survival.ipynb": notebook("survival_r.ipynb"),
            "analysis/broken.ipynb": TRUNCATED,
            "shop/cart.py": "def cart_total(prices):\n    return sum(prices)\n",
        }
    )
    return repo


def test_an_invalid_notebook_is_indexed_as_text_and_counted(notebook_repo: Path) -> None:
    report = build_index(notebook_repo, progress=False)
    assert report.fallback == {"invalid_notebook": 1}
    index = Index.open(notebook_repo)
    assert index.status()["counts"]["fallback"] == {"invalid_notebook": 1}
    broken = [r for r in index.search("Pricing analysis discounts", k=20) if "broken" in r.path]
    assert broken and broken[0].kind == "text" and broken[0].cell is None
    status = run_cli("status", "--repo", str(notebook_repo))
    assert "as text    invalid_notebook 1" in status.stdout
    # An update that keeps the file keeps counting it.
    write_files(notebook_repo, {"shop/tax.py": "RATE = 2\n"})
    commit_all(notebook_repo, "tax")
    assert update_index(notebook_repo, progress=False).fallback == {"invalid_notebook": 1}


def test_verify_checks_cell_chunks_against_their_cells(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    proc = run_cli("verify", "--json", "--repo", str(notebook_repo))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["chunks_checked"] == len(Index.open(notebook_repo))


def test_show_a_cell_chunk_by_location(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    out = run_cli("show", "analysis/pricing.ipynb#cell=3", "--repo", str(notebook_repo))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("analysis/pricing.ipynb#cell=3:1-3  apply_discount [function]")
    ranged = run_cli(
        "show", "analysis/pricing.ipynb#cell=3:12-13", "--json", "--repo", str(notebook_repo)
    )
    record = json.loads(ranged.stdout)
    assert (record["qualname"], record["cell"], record["start_line"]) == ("Basket.total", 3, 12)
    missing = run_cli("show", "analysis/pricing.ipynb#cell=99", "--repo", str(notebook_repo))
    assert missing.returncode == 2 and "no chunk at" in missing.stderr


def test_search_results_carry_the_cell(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    out = run_cli("search", "apply a discount percentage", "--json", "--repo", str(notebook_repo))
    top = json.loads(out.stdout)[0]
    assert (top["path"], top["cell"], top["qualname"]) == (
        "analysis/pricing.ipynb",
        3,
        "apply_discount",
    )
    text = run_cli("search", "apply a discount percentage", "--repo", str(notebook_repo))
    assert text.stdout.split()[1] == "analysis/pricing.ipynb#cell=3:1-3"
    plain = run_cli("search", "cart_total", "--json", "--repo", str(notebook_repo))
    assert "cell" not in json.loads(plain.stdout)[0]  # other files' records are unchanged


def test_compress_a_cell_chunk_points_back_into_the_cell(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    index = Index.open(notebook_repo)
    results = index.search("Basket items total", k=5, compress=True, log=False)
    block = next(r.text or "" for r in results if r.qualname == "Basket")
    assert block.startswith("## analysis/pricing.ipynb#cell=3:6-13")
    assert "...L" in block  # elided lines are cell lines, fetched with show ...#cell=3:a-b
    assert index.show("analysis/pricing.ipynb#cell=3:6-13").qualname == "Basket"


def test_code_graph_links_calls_across_cells(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    index = Index.open(notebook_repo)
    [entry] = index.related("apply_discount", direction="callers")
    assert entry.symbol.cell == 3 and entry.symbol.to_dict()["cell"] == 3
    assert {c.id for c in entry.callers or []} == {"file:analysis/pricing.ipynb"}
    [total] = index.related("Basket.total", direction="callees")
    assert [c.name for c in total.callees or []] == ["fsum"]  # math.fsum: outside the repo
    [cell_caller] = index.related("Basket", direction="callers")
    assert (cell_caller.callers or [])[0].id == "file:analysis/pricing.ipynb"


def test_mcp_retrieve_reads_a_cell(notebook_repo: Path) -> None:
    build_index(notebook_repo, progress=False)
    service = Service(str(notebook_repo), None)
    text = service.retrieve("analysis/pricing.ipynb#cell=5", 1, 2)
    assert text.splitlines() == [
        "## analysis/pricing.ipynb#cell=5:1-2 (of 3 lines)",
        "basket = Basket()",
        "basket.items = [10, 20]",
    ]
    shown = service.show("analysis/pricing.ipynb#cell=2")
    assert shown.startswith("## analysis/pricing.ipynb#cell=2:1-3") and "VAT_RATE" in shown


def test_savings_count_a_notebook_by_its_sources(notebook_repo: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("INDEXER_SAVINGS", raising=False)
    build_index(notebook_repo, progress=False)
    index = Index.open(notebook_repo)
    results = index.search("apply a discount percentage", k=1, log=True)
    assert results[0].path == "analysis/pricing.ipynb"
    flush()  # the API's lines are counted on a background thread
    rep = report(index.snapshot.parent.parent)
    sources = count_tokens(sources_text(notebook("pricing.ipynb")))
    assert rep.baseline_tokens == sources < count_tokens(notebook("pricing.ipynb").decode())
