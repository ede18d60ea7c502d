"""Execute the tuning notebooks headless (nbclient), papermill-style parameters, check artifacts.

    python scripts/run_notebooks.py --smoke                 # both, tiny corpus, temp outputs (CI)
    python scripts/run_notebooks.py --full                  # the real run: writes artifacts/
    python scripts/run_notebooks.py --full tune_fusion -p rounds=3

Parameters go into a cell injected after the notebook's `parameters` cell, as papermill does.
The executed copy, with outputs and plots, is written to `.bench/notebooks/<name>.ipynb`
(`--executed-dir`); the committed notebooks stay without outputs. After a run, the artifacts
the notebook wrote are loaded with the runtime's own loaders; a smoke run writes them to a
temporary directory (`--out`), never to artifacts/.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("distill_static_vectors", "tune_fusion")


def parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def inject(nb: Any, params: dict[str, Any]) -> None:
    import nbformat

    source = "# Injected parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in params.items())
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["injected-parameters"]
    for i, c in enumerate(nb.cells):
        if "parameters" in c.get("metadata", {}).get("tags", []):
            nb.cells.insert(i + 1, cell)
            return
    nb.cells.insert(0, cell)


def execute(name: str, params: dict[str, Any], executed_dir: Path, timeout: int) -> Path:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    inject(nb, params)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    executed_dir.mkdir(parents=True, exist_ok=True)
    out = executed_dir / f"{name}.ipynb"
    try:
        client.execute()
    finally:
        nbformat.write(nb, out)
    return out


def check_outputs(name: str, out_dir: Path) -> str:
    """Load what a notebook wrote with the runtime's loaders (raises on anything invalid)."""
    sys.path.insert(0, str(ROOT))
    from indexer.index.vectors import StaticVectors
    from indexer.search.fusion import FusionConfig

    if name == "distill_static_vectors":
        table = StaticVectors.load(out_dir / "static_vectors")
        probe = table.embed("parse the http response headers")
        if table.card.get("variant") is None or not probe.any():
            raise SystemExit(f"{name}: table in {out_dir} has no card variant or embeds nothing")
        return f"static_vectors {len(table.vocab)} x {table.dim}, variant {table.card['variant']}"
    path = out_dir / "fusion.json"
    config = FusionConfig.load(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    if "scores" not in raw:
        raise SystemExit(f"{name}: {path} has no scores")
    return f"fusion.json rrf_k={config['rrf_k']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--smoke", action="store_true", help="tiny corpus, temporary outputs")
    mode.add_argument("--full", action="store_true", help="the real run (writes artifacts/)")
    parser.add_argument("names", nargs="*", help=f"notebooks to run (default: {NOTEBOOKS})")
    parser.add_argument("--out", type=Path, default=None, help="where the artifacts go")
    parser.add_argument("-p", "--param", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--executed-dir", type=Path, default=ROOT / ".bench" / "notebooks")
    parser.add_argument("--timeout", type=int, default=None, help="seconds per cell")
    args = parser.parse_args(argv)

    unknown = set(args.names) - set(NOTEBOOKS)
    if unknown:
        parser.error(f"unknown notebook(s) {sorted(unknown)}; choose from {NOTEBOOKS}")
    out = args.out.resolve() if args.out else None  # the kernel runs in notebooks/
    if args.smoke and out is None:
        out = Path(tempfile.mkdtemp(prefix="indexer-notebooks-"))
    extra = dict(p.split("=", 1) for p in args.param)
    for name in args.names or NOTEBOOKS:
        params: dict[str, Any] = {"smoke": bool(args.smoke)}
        if out is not None:
            target = out / "static_vectors" if name == "distill_static_vectors" else out
            params["out_dir"] = str(target)
        params.update({k: parse_value(v) for k, v in extra.items()})
        start = time.time()
        executed = execute(
            name, params, args.executed_dir, args.timeout or (600 if args.smoke else 7200)
        )
        checked = check_outputs(name, out if out is not None else ROOT / "artifacts")
        print(f"{name}: ok in {time.time() - start:.0f}s -> {checked}; executed copy {executed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
