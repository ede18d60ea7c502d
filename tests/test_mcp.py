"""The MCP server end to end: the official SDK's client talks to `indexer mcp` over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from indexer import build_index

from .conftest import run_cli


@pytest.fixture
def built(sample_repo: Path) -> Path:
    build_index(sample_repo, progress=False)
    return sample_repo


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def _session(repo: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "indexer", "mcp", "--repo", str(repo)]
    )
    out: dict[str, Any] = {}
    async with Client(params) as client:
        tools = await client.list_tools()
        out["tools"] = {t.name: t for t in tools.tools}
        out["search"] = await client.call_tool("search", {"query": "retry with backoff", "k": 5})
        top = _text(out["search"]).split("\n", 1)[0].split()[1]  # ## path:start-end [name]
        out["show"] = await client.call_tool("show", {"chunk_id": top})
        out["budget"] = await client.call_tool(
            "search", {"query": "invoice tax total", "budget": 120}
        )
        out["retrieve"] = await client.call_tool(
            "retrieve", {"path": "net/retry.py", "start_line": 1, "end_line": 3}
        )
        out["related"] = await client.call_tool(
            "related", {"target": "total_with_tax", "direction": "callees"}
        )
        out["status"] = await client.call_tool("status", {})
        out["outside"] = await client.call_tool("retrieve", {"path": "../../etc/passwd"})
        out["absolute"] = await client.call_tool("retrieve", {"path": "/etc/passwd"})
        out["unknown"] = await client.call_tool("show", {"chunk_id": "0123456789abcdef"})
        out["big_k"] = await client.call_tool("search", {"query": "x", "k": 5000})
        out["big_budget"] = await client.call_tool("search", {"query": "x", "budget": 10**9})
        out["big_range"] = await client.call_tool(
            "retrieve", {"path": "net/retry.py", "start_line": 1, "end_line": 100000}
        )
    return out


def test_mcp_server_answers_a_real_client_and_refuses_bad_requests(built: Path) -> None:
    out = anyio.run(_session, built)
    assert set(out["tools"]) == {"search", "show", "retrieve", "related", "status"}
    assert "BEFORE" in out["tools"]["search"].description or "first" in (
        out["tools"]["search"].description
    )
    assert out["tools"]["search"].input_schema["properties"]["budget"]
    search = _text(out["search"])
    assert not out["search"].is_error and "net/retry.py" in search
    assert "retry_with_backoff" in search and "...L" in search  # compressed by default
    show = _text(out["show"])
    assert "def retry_with_backoff" in show and "time.sleep" in show
    assert not out["budget"].is_error and "InvoiceCalculator" in _text(out["budget"])
    assert _text(out["retrieve"]).splitlines()[1:] == ["import socket", "import time"]
    related = json.loads(_text(out["related"]))
    assert "InvoiceCalculator.subtotal" in {c.get("qualname") for c in related[0]["callees"]}
    assert json.loads(_text(out["status"]))["counts"]["files"] >= 5
    # Bad requests are tool errors with a clear message, and the server keeps serving.
    for key, words in {
        "outside": "outside the repository",
        "absolute": "outside the repository",
        "unknown": "no chunk with id",
        "big_k": "k must be between",
        "big_budget": "budget must be between",
        "big_range": "at most 400 lines",
    }.items():
        assert out[key].is_error, key
        assert words in _text(out[key]), (key, _text(out[key]))


def test_mcp_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("mcp", "--repo", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("indexer: error: not a git repository")


def test_agents_setup_snippets(built: Path) -> None:
    proc = run_cli("agents", "--json", cwd=built)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    config = json.loads(data["mcp-json"]["text"])
    assert config["mcpServers"]["indexer"]["args"][-3:] == ["mcp", "--repo", str(built.resolve())]
    assert "search" in data["skill"]["text"]
