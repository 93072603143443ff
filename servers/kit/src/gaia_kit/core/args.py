"""Tool argument types that several servers declare alike, so their schemas stay the same.

The descriptions are part of each tool's published schema (docs/tools.md): change one here and
every server that uses the type changes with it, which is the point.
"""

from typing import Annotated, Literal

from pydantic import Field

OutputFormat = Annotated[
    Literal["markdown", "json", "text"],
    Field(description="Output format: 'markdown' (default), 'json' or 'text'"),
]

# How far into a paged result to read on; servers whose offset counts something else
# (a report, a window of pages) say so in their own description.
StartIndex = Annotated[int, Field(ge=0, description="Character offset in the result, for reading on")]

MaxLength = Annotated[
    int | None,
    Field(ge=1, description="Maximum characters to return (default and ceiling: the server's cap)"),
]
