"""The MCP server end to end: the official SDK's client talks to `indexer mcp` over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

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
        out["misspelt"] = await client.call_tool("related", {"target": "clamp", "dept": 2})
        out["bad_direction"] = await client.call_tool(
            "related", {"target": "total_with_tax", "direction": "up"}
        )
        out["absent"] = await client.call_tool("search", {"query": "KafkaConsumerGroupRebalance"})
        out["filtered"] = await client.call_tool(
            "search", {"query": "cart", "paths": ["web/*"], "kind": "class"}
        )
    return out


def test_mcp_server_answers_a_real_client_and_refuses_bad_requests(built: Path) -> None:
    out = anyio.run(_session, built)
    assert set(out["tools"]) == {"search", "show", "retrieve", "related", "status"}
    assert "BEFORE" in out["tools"]["search"].description or "first" in (
        out["tools"]["search"].description
    )
    search_schema = out["tools"]["search"].input_schema
    assert search_schema["additionalProperties"] is False
    k = search_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (1, 50) and k["description"]
    assert all(p.get("description") for p in search_schema["properties"].values())
    related_props = out["tools"]["related"].input_schema["properties"]
    assert related_props["direction"]["enum"] == ["callers", "callees", "both"]
    assert (related_props["depth"]["minimum"], related_props["depth"]["maximum"]) == (1, 3)
    search = _text(out["search"])
    assert not out["search"].is_error and "net/retry.py" in search
    assert "[confidence " in search.splitlines()[0]  # each result says how sure it is
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
        "big_k": "less than or equal to 50",
        "big_budget": "less than or equal to 100000",
        "big_range": "at most 400 lines",
        "misspelt": "dept",
        "bad_direction": "callers",
    }.items():
        assert out[key].is_error, key
        assert words in _text(out[key]), (key, _text(out[key]))
    absent = _text(out["absent"])
    assert not out["absent"].is_error
    assert absent.startswith("low confidence: no symbol named KafkaConsumerGroupRebalance")
    assert len(absent.splitlines()) <= 6  # references only, no compressed bodies
    filtered = _text(out["filtered"])
    assert "web/cart.js" in filtered and "net/" not in filtered and "billing/" not in filtered


async def _session_outside(path: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "indexer", "mcp", "--repo", str(path)]
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        result = await client.call_tool("search", {"query": "anything"})
        return {"tools": [t.name for t in tools.tools], "search": result}


def test_a_bad_repo_is_a_tool_error_after_the_handshake(tmp_path: Path) -> None:
    out = anyio.run(_session_outside, tmp_path)
    assert "search" in out["tools"]  # the server is up and answers
    assert out["search"].is_error and "not a git repository" in _text(out["search"])


async def _search_with_stderr_to(repo: Path, errlog: Any) -> str:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "indexer", "mcp", "--repo", str(repo)]
    )
    async with Client(stdio_client(params, errlog=errlog)) as client:
        return _text(await client.call_tool("search", {"query": "retry backoff"}))


def test_the_server_prints_nothing_on_stderr(built: Path, tmp_path: Path) -> None:
    """No faiss loader lines: clients show a server's stderr to users as errors."""
    with (tmp_path / "stderr.txt").open("w+") as errlog:
        answer = anyio.run(_search_with_stderr_to, built, errlog)
        errlog.seek(0)
        stderr = errlog.read()
    assert "retry_with_backoff" in answer
    assert stderr == ""


def test_agents_setup_snippets_are_portable(built: Path) -> None:
    proc = run_cli("agents", "--json", cwd=built)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert str(built.resolve()) not in proc.stdout and sys.executable not in proc.stdout
    claude = json.loads(data["claude-code"]["text"])
    assert data["claude-code"]["file"] == ".mcp.json"
    assert claude["mcpServers"]["indexer"] == {"command": "indexer", "args": ["mcp"]}
    vscode = json.loads(data["vscode"]["text"])
    assert data["vscode"]["file"] == ".vscode/mcp.json"
    assert vscode["servers"]["indexer"]["type"] == "stdio"
    assert "${workspaceFolder}" in vscode["servers"]["indexer"]["args"]
    cursor = json.loads(data["cursor"]["text"])
    assert "${workspaceFolder}" in cursor["mcpServers"]["indexer"]["args"]
    assert data["codex"]["file"] == ".codex/config.toml"
    assert "--repo" not in data["codex"]["text"]
    assert "search" in data["skill"]["text"] and "low confidence" in data["skill"]["text"]
