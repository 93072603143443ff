"""What pages say: HTML and PDF text extraction, the page reader, web search and the local corpus (ZIM or folder)."""
