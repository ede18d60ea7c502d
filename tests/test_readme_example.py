"""The README's first search, run on this repository as a new user would (issue 14)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from indexer import Index, build_index

ROOT = Path(__file__).resolve().parents[1]
QUERY = "reciprocal rank fusion of BM25 and dense results"


def readme_example() -> dict[str, object]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"`indexer search --json` prints.*?```json\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    listing = block.group(1).replace(", ...]", "]")  # the README shows the first record
    first: dict[str, object] = json.loads(listing)[0]
    return first


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository's git history")
def test_readme_query_answers_rrf_and_no_notebook_json(tmp_path: Path) -> None:
    build_index(ROOT, index_dir=tmp_path / "index", progress=False)
    index = Index.open(ROOT, index_dir=tmp_path / "index")
    results = index.search(QUERY, k=10, with_text=True, log=False)
    assert "rrf" in [r.qualname for r in results[:2]]
    for r in results:  # notebook results are cells, never windows of the notebook's JSON
        assert not r.path.endswith(".ipynb") or r.cell is not None
        assert '"cell_type"' not in (r.text or "")
    rrf = next(r for r in results if r.qualname == "rrf").to_dict()
    example = readme_example()
    stable = ("id", "path", "symbol", "qualname", "kind", "language", "signature")
    assert {k: example[k] for k in stable} == {k: rrf[k] for k in stable}
    rrf.pop("text")  # asked for here (with_text), not by the README's command
    assert set(example) == set(rrf)  # the same fields (values of scores move with history)
