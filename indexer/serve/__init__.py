"""What users and agents talk to: the CLI, the serve daemon, the MCP server, agent configs."""
