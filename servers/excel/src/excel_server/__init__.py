"""excel: an MCP server for Excel workbooks."""
