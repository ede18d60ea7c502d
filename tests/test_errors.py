"""Bad input: one clear line on stderr, exit code 2, no traceback, and the index survives."""

import json
from pathlib import Path

import pygit2

from indexer.index.segment_format import SEGMENT_FORMAT

from .conftest import live_segment, run_cli


def assert_clean_error(proc, needle: str) -> None:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert needle in lines[0]
    assert proc.stdout == ""


def test_not_a_repository(tmp_path: Path) -> None:
    assert_clean_error(run_cli("build", "--repo", str(tmp_path)), "not a git repository")
    assert_clean_error(
        run_cli("build", "--repo", str(tmp_path / "missing")), "not a git repository"
    )
    assert_clean_error(run_cli("search", "x", "--repo", str(tmp_path)), "not a git repository")


def test_repository_without_commits(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path))
    assert_clean_error(run_cli("build", "--repo", str(tmp_path)), "no commits")


def test_search_before_build(sample_repo: Path) -> None:
    assert_clean_error(run_cli("search", "x", "--repo", str(sample_repo)), "indexer build")
    assert_clean_error(run_cli("status", "--repo", str(sample_repo)), "indexer build")


def _snapshot_state(repo: Path) -> tuple[str, str]:
    current = (repo / ".git" / "indexer" / "CURRENT").read_text()
    manifest = (repo / ".git" / "indexer" / "generations" / f"{current.strip()}.json").read_text()
    return current, manifest


def test_bad_input_leaves_the_existing_index_untouched(sample_repo: Path) -> None:
    assert run_cli("build", "--repo", str(sample_repo)).returncode == 0
    before = _snapshot_state(sample_repo)
    assert_clean_error(
        run_cli("build", "--repo", str(sample_repo), "--rev", "no-such-branch"), "unknown revision"
    )
    assert_clean_error(run_cli("show", "not-an-id", "--repo", str(sample_repo)), "not a chunk id")
    assert_clean_error(run_cli("show", "0123456789abcdef", "--repo", str(sample_repo)), "no chunk")
    assert_clean_error(run_cli("search", "  ", "--repo", str(sample_repo)), "empty")
    assert_clean_error(run_cli("search", "x", "-k", "0", "--repo", str(sample_repo)), "at least 1")
    assert _snapshot_state(sample_repo) == before
    assert run_cli("search", "format_money", "--repo", str(sample_repo)).returncode == 0


def _built_snapshot(repo: Path) -> tuple[Path, dict]:  # type: ignore[type-arg]
    """Build, then return the live segment's directory and its manifest."""
    assert run_cli("build", "--repo", str(repo)).returncode == 0
    segment = live_segment(repo)
    return segment, json.loads((segment / "segment.json").read_text())


def test_corrupt_and_foreign_indexes_say_how_to_rebuild(sample_repo: Path) -> None:
    snapshot, manifest = _built_snapshot(sample_repo)
    manifest["format"] = 999
    (snapshot / "segment.json").write_text(json.dumps(manifest))
    assert_clean_error(run_cli("search", "x", "--repo", str(sample_repo)), "indexer build")

    manifest["format"] = SEGMENT_FORMAT
    (snapshot / "segment.json").write_text(json.dumps(manifest))
    with (snapshot / "texts_z.bin").open("ab") as fh:
        fh.write(b"garbage")
    assert_clean_error(run_cli("search", "x", "--repo", str(sample_repo)), "truncated")

    (snapshot / "segment.json").write_text("{broken")
    assert_clean_error(run_cli("status", "--repo", str(sample_repo)), "indexer build")
    # Rebuilding recovers.
    assert run_cli("build", "--repo", str(sample_repo)).returncode == 0
    assert run_cli("search", "format_money", "--repo", str(sample_repo)).returncode == 0


def test_an_index_missing_required_files_says_how_to_rebuild(sample_repo: Path) -> None:
    snapshot, manifest = _built_snapshot(sample_repo)
    del manifest["artifacts"]["bm25_tfs.npy"]
    (snapshot / "bm25_tfs.npy").unlink()
    (snapshot / "segment.json").write_text(json.dumps(manifest))
    assert_clean_error(run_cli("search", "x", "--repo", str(sample_repo)), "indexer build")
