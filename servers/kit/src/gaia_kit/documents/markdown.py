"""Markdown rendering that more than one server's output uses."""


def markdown_table(rows: list[list[str]]) -> str:
    """A markdown table whose first row is the header; short rows are padded to the widest.

    Pipes are escaped and line breaks become <br>, so a cell never breaks the table.
    """
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = []
    for index, row in enumerate(rows):
        cells = [c.replace("|", "\\|").replace("\n", "<br>") for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)
