"""The episode machinery: the loop, its token tape, tool-call parsing, the MCP session, the token budget."""
