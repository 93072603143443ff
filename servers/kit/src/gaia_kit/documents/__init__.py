"""Office files, LibreOffice conversion, Markdown tables and text encodings."""
