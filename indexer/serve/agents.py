"""Setup snippets for coding agents (`indexer agents`): MCP configuration and a skill text."""

from __future__ import annotations

import json

SKILL = """\
## Code search (indexer)

This repository has a code index. For any question about where or how something is
implemented, defined, configured or called, search the index BEFORE opening or grepping files:

- MCP: `search` (query, k, budget, compress, paths, language, kind), `show` (location or
  chunk id), `retrieve` (path, lines), `related` (callers/callees), `status`.
- CLI: `indexer search "QUERY" --budget 800` (or `--compress`, `--json`, `--path 'src/*'`),
  `indexer show path:start-end`, `indexer related NAME --callers`.

Results are `## path:start-end name [confidence c]` with signatures and the lines that matter;
`...Lx-y` marks elided lines x-y: fetch them with `show`/`retrieve` only if you need them.
An answer that starts with `low confidence:` means the repository has nothing close: do not
keep searching for that concept (the CLI exits with status 1).
Prefer several precise searches (identifiers, error messages, behaviour in plain words) over
reading whole files. Use `related` before changing a function to find its callers.
"""


def setup_snippets() -> dict[str, dict[str, str]]:
    """Per agent: a title, the file it reads (empty: a command to run) and what to put there.

    Portable: the `indexer` on PATH (not this machine's virtualenv) and no absolute repository
    path. Tools that start MCP servers in the project directory need no `--repo` (Claude Code,
    Codex); the others get the workspace variable they expand (`${workspaceFolder}`), so the
    files can be committed and work in every clone.
    """
    workspace = ["mcp", "--repo", "${workspaceFolder}"]
    return {
        "claude-code": {
            "title": "Claude Code: project-scoped server, committed with the repository",
            "file": ".mcp.json",
            "text": json.dumps(
                {"mcpServers": {"indexer": {"command": "indexer", "args": ["mcp"]}}}, indent=2
            ),
        },
        "claude-code-cli": {
            "title": "Claude Code: or let it write .mcp.json",
            "file": "",
            "text": "claude mcp add --scope project indexer -- indexer mcp",
        },
        "cursor": {
            "title": "Cursor: project MCP config",
            "file": ".cursor/mcp.json",
            "text": json.dumps(
                {"mcpServers": {"indexer": {"command": "indexer", "args": workspace}}}, indent=2
            ),
        },
        "vscode": {
            "title": "VS Code (Copilot agent mode): workspace MCP config",
            "file": ".vscode/mcp.json",
            "text": json.dumps(
                {
                    "servers": {
                        "indexer": {"type": "stdio", "command": "indexer", "args": workspace}
                    }
                },
                indent=2,
            ),
        },
        "codex": {
            "title": "OpenAI Codex: project config (read in trusted projects)",
            "file": ".codex/config.toml",
            "text": '[mcp_servers.indexer]\ncommand = "indexer"\nargs = ["mcp"]\n',
        },
        "skill": {
            "title": "Instructions telling the agent when to search",
            "file": "AGENTS.md or CLAUDE.md",
            "text": SKILL,
        },
    }
