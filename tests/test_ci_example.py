"""The GitHub Actions example in docs/examples is a valid workflow that uses current actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "github-actions-indexer.yml"


def test_the_workflow_example_passes_the_github_workflow_schema() -> None:
    checker = Path(sys.executable).parent / "check-jsonschema"
    proc = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_workflow_example_is_serialised_and_hides_no_failure() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "actions/checkout@v5" in text and "actions/setup-python@v6" in text
    assert "\nconcurrency:" in text
    assert "|| true" not in text and "--force" not in text
    assert "indexer ci --remote origin --push" in text
