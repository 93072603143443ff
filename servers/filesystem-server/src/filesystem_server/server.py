"""filesystem-server: read, write, edit, list and search files in the session workspace.

Every path goes through the session's guard: the workspace is read-write, the GAIA dataset is
read-only, nothing else exists. Files and directories are opened beneath their root with no link
followed out of it (the guard's open_file and open_dir), and writes are renamed into folders opened
the same way, so a link swapped in by sandboxed code between a check and an open leads nowhere.
Reads are windowed, listings and searches bounded, writes atomic.

The tools live by area (reading, writing, listing, info); this module is their table of contents.
Structured results (output schemas) sit beside the tools that give them.
"""

from gaia_kit import KitServer, serve
from gaia_kit.core.tools import add_tools

from . import info, listing, reading, writing

server = KitServer(
    "filesystem-server",
    instructions=(
        "Files of the current session. Relative paths resolve against the session workspace, which is "
        "read-write; the GAIA dataset is read-only (list_allowed_directories shows both). Long files "
        "are read in pages: follow the start_index hint at the end of a cut result."
    ),
)

# In the order tools/list has always given them.
TOOLS = [
    reading.read_text_file,
    reading.read_file,
    reading.read_media_file,
    reading.read_multiple_files,
    writing.write_file,
    writing.edit_file,
    writing.create_directory,
    listing.list_directory,
    listing.list_directory_with_sizes,
    listing.directory_tree,
    writing.move_file,
    listing.search_files,
    info.get_file_info,
    info.list_allowed_directories,
]
add_tools(server, TOOLS)


def main() -> None:
    serve(server)
