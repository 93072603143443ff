"""excel: read, write and shape Excel workbooks with openpyxl.

Reads stream (read_only mode) and are paged, so any size of sheet is safe to open. Every write
loads the workbook under a per-file lock and saves it atomically (temp file + rename). Formulas
are vetted before they are written (vetting.py) and computed when read (engine.py). .xls and
.csv files are read through an .xlsx conversion in the workspace.

The tools live by area (calculation, inspection, writing, sheets, formatting, objects, ranges);
this module is their table of contents.
"""

from __future__ import annotations

import threading

from gaia_kit import KitServer, serve
from gaia_kit.core.bounded import fork_gate
from gaia_kit.core.tools import add_tools

from . import calculation, engine, formatting, inspection, objects, ranges, sheets, writing

server = KitServer(
    "excel",
    bounded_calls=True,  # each call in a worker under GAIA_CALL_MEMORY_MB (gaia_kit.core.bounded)
    instructions=(
        "Excel workbooks (.xlsx, .xlsm; .xls and .csv are read through a conversion): read cells with "
        "computed values, page by page; write data and formulas; format, chart, pivot and restructure sheets. "
        "Paths are relative to the session workspace; the dataset is read-only."
    ),
)
WARM_AFTER_S = 20.0

# In the order tools/list has always given them.
TOOLS = [
    calculation.apply_formula,
    calculation.validate_formula_syntax,
    inspection.read_data_from_excel,
    inspection.get_workbook_metadata,
    inspection.get_merged_cells,
    inspection.get_data_validation_info,
    inspection.validate_excel_range,
    writing.write_data_to_excel,
    writing.create_workbook,
    sheets.create_worksheet,
    sheets.copy_worksheet,
    sheets.delete_worksheet,
    sheets.rename_worksheet,
    formatting.format_range,
    formatting.merge_cells,
    formatting.unmerge_cells,
    objects.create_table,
    objects.create_chart,
    objects.create_pivot_table,
    ranges.copy_range,
    ranges.delete_range,
    ranges.insert_rows,
    ranges.insert_columns,
    ranges.delete_sheet_rows,
    ranges.delete_sheet_columns,
]
add_tools(server, TOOLS)


def _warm() -> None:
    # A call forked while this thread imports would find the import's locks held forever.
    with fork_gate:
        engine.warm()


def main() -> None:
    # The formula engine takes a second or more to import (numpy, scipy): do it while idle, so the
    # first formula without a cached value does not wait for it; later than start-up, when a
    # gateway is starting every server at once.
    warm = threading.Timer(WARM_AFTER_S, _warm)
    warm.daemon = True
    warm.start()
    serve(server)
