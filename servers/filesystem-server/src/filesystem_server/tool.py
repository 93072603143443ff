"""The argument types the filesystem tools share.

Tools are defined in modules by area with gaia_kit.core.tools.tool; server.py lists them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

PathArg = Annotated[
    str, Field(description="File or directory path; relative paths resolve against the workspace")
]
# Not the kit's StartIndex: this description is the one filesystem-server has always published.
StartIndex = Annotated[int, Field(ge=0, description="Character offset to start reading from, for paging")]
