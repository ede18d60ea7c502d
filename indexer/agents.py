"""Setup snippets for coding agents (`indexer agents`): MCP configuration and a skill text."""

from __future__ import annotations

import json
import sys

SKILL = """\
## Code search (indexer)

This repository has a code index. For any question about where or how something is
implemented, defined, configured or called, search the index BEFORE opening or grepping files:

- MCP: `search` (query, k, budget, compress), `show` (chunk id), `retrieve` (path, lines),
  `related` (callers/callees), `status`.
- CLI: `indexer search "QUERY" --budget 800` (or `--compress`, `--json`),
  `indexer show CHUNK_ID`, `indexer related NAME --callers`.

Results are `path:start-end qualname chunk_id` with signatures and the lines that matter;
`...Lx-y` marks elided lines x-y: fetch it with `show`/`retrieve` only if you need it.
Prefer several precise searches (identifiers, error messages, behaviour in plain words) over
reading whole files. Use `related` before changing a function to find its callers.
"""


def setup_snippets(repo: str) -> dict[str, dict[str, str]]:
    """Per agent: a title, the file it goes in (if any) and the text to put there."""
    command = sys.executable
    args = ["-m", "indexer", "mcp", "--repo", repo]
    server = {"command": command, "args": args}
    toml_args = ", ".join(json.dumps(a) for a in args)
    return {
        "claude-code": {
            "title": "Claude Code: register the MCP server (or commit .mcp.json)",
            "file": "",
            "text": f"claude mcp add indexer -- {command} {' '.join(args)}",
        },
        "mcp-json": {
            "title": "Claude Code project / Cursor / Windsurf / VS Code style MCP config",
            "file": ".mcp.json (Claude Code), .cursor/mcp.json (Cursor)",
            "text": json.dumps({"mcpServers": {"indexer": server}}, indent=2),
        },
        "codex": {
            "title": "OpenAI Codex CLI",
            "file": "~/.codex/config.toml",
            "text": f'[mcp_servers.indexer]\ncommand = "{command}"\nargs = [{toml_args}]\n',
        },
        "skill": {
            "title": "Instructions telling the agent when to search",
            "file": "AGENTS.md or CLAUDE.md",
            "text": SKILL,
        },
    }
