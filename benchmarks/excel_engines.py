"""Formula engines compared on workbooks saved without cached values: coverage, time, peak memory.

    uv run python -m benchmarks.excel_engines [--rows 20000] [--pycel-python /tmp/cand/bin/python]

Two workbooks, both written by openpyxl (so no formula has a saved value): the twenty common
formulas of gaia_kit_testing.formula_cases, and a table of --rows rows whose column D is
=B*C with a SUMIFS over it at the top (the total needs every row's formula). Each engine runs in
a fresh child process that reports its own peak RSS:

- gaia-env: the excel server's engine (the `formulas` package fed cell by cell, lazily);
- formulas ExcelModel: the same package compiling the whole workbook at once;
- pycel (a 2021 release; pass the Python of a venv that has it, e.g. `pip install pycel`);
- LibreOffice headless: `soffice --convert-to xlsx` recalculates, then openpyxl reads the values.
Engines that are not installed are skipped, and say so.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gaia_kit_testing import formula_cases as cases

ROOT = Path(__file__).resolve().parents[1]

PEAK = """
with open("/proc/self/status") as _status:
    _peak = next(int(line.split()[1]) for line in _status if line.startswith("VmHWM:"))
print(json.dumps({"peak_rss_mb": round(_peak / 1024)}))
"""

PRELUDE = """
import json, time
"""

GAIA = """
from openpyxl import load_workbook
from excel_server.compute import compute, evaluator
started = time.perf_counter()
engine = evaluator(load_workbook(PATH), load_workbook(PATH, data_only=True))
values = [compute(engine, SHEET, row=row, col=col)[0] for row, col in CELLS]
"""

MODEL = """
import formulas
started = time.perf_counter()
solution = formulas.ExcelModel().loads(PATH).finish().calculate()
def pick(row, col):
    from openpyxl.utils import get_column_letter
    found = solution.get(f"'[{NAME}]{SHEET.upper()}'!{get_column_letter(col)}{row}")
    value = found.value[0, 0] if found is not None else None
    return value.item() if hasattr(value, "item") else value
values = [pick(row, col) for row, col in CELLS]
"""

PYCEL = """
from pycel import ExcelCompiler
from openpyxl.utils import get_column_letter
started = time.perf_counter()
compiler = ExcelCompiler(filename=PATH)
def pick(row, col):
    try:
        return compiler.evaluate(f"{SHEET}!{get_column_letter(col)}{row}")
    except Exception:
        return None
values = [pick(row, col) for row, col in CELLS]
"""

EPILOGUE = """
seconds = time.perf_counter() - started
print(json.dumps({"values": [v if isinstance(v, (int, float, str, bool)) or v is None else str(v) for v in values],
                  "seconds": round(seconds, 2)}))
"""


def child(python: str, body: str, path: Path, sheet: str, cells: list[tuple[int, int]]) -> dict:
    setup = f"PATH, NAME, SHEET, CELLS = {str(path)!r}, {path.name!r}, {sheet!r}, {cells!r}\n"
    script = PRELUDE + setup + body + EPILOGUE + PEAK
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1][:200] if done.stderr.strip() else "failed"}
    report, peak = done.stdout.strip().splitlines()[-2:]
    return {**json.loads(report), **json.loads(peak)}


def libreoffice(path: Path, sheet: str, cells: list[tuple[int, int]]) -> dict:
    soffice = shutil.which("soffice")
    timer = shutil.which("time") or "/usr/bin/time"
    if soffice is None or not Path(timer).exists():
        return {"error": "soffice or /usr/bin/time is not installed"}
    from openpyxl import load_workbook

    with tempfile.TemporaryDirectory(prefix="lo-") as out:
        profile = Path(out) / "profile"
        command = [timer, "-f", "%M", soffice, "--headless", "--norestore",
                   f"-env:UserInstallation=file://{profile}", "--convert-to", "xlsx", "--outdir", out, str(path)]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        seconds = time.perf_counter() - started
        produced = Path(out) / path.name
        if not produced.exists():
            return {"error": done.stderr.strip()[-200:]}
        book = load_workbook(produced, data_only=True, read_only=True)
        values = [book[sheet].cell(row, col).value for row, col in cells]
        peak = int(done.stderr.strip().splitlines()[-1]) // 1024
    return {"values": values, "seconds": round(seconds, 2), "peak_rss_mb": peak}


def big_table(path: Path, rows: int) -> float:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet.append(["region", "qty", "price", "amount", "North total"])
    sheet["E2"] = '=SUMIFS(D2:D{0},A2:A{0},"North")'.format(rows + 1)
    for row in range(2, rows + 2):
        region = ["North", "South", "East", "West"][row % 4]
        sheet.cell(row, 1, region), sheet.cell(row, 2, row % 13), sheet.cell(row, 3, (row % 7) * 1.5)
        sheet.cell(row, 4, f"=B{row}*C{row}")
    book.save(path)
    return sum((r % 13) * (r % 7) * 1.5 for r in range(2, rows + 2) if r % 4 == 0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the big table")
    parser.add_argument("--pycel-python", help="a Python that can import pycel")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="excel-engines-"))
    small = cases.build(folder / "cases.xlsx")
    big = folder / "big.xlsx"
    total = big_table(big, args.rows)
    small_cells = [(row, 2) for row in range(1, len(cases.CASES) + 1)]
    engines: dict = {
        "gaia-env (formulas, per cell)": lambda p, s, c: child(sys.executable, GAIA, p, s, c),
        "formulas ExcelModel (whole workbook)": lambda p, s, c: child(sys.executable, MODEL, p, s, c),
        "LibreOffice headless": libreoffice,
    }
    if args.pycel_python:
        engines["pycel"] = lambda p, s, c: child(args.pycel_python, PYCEL, p, s, c)
    print(f"| engine | common formulas computed (of {len(cases.CASES)}) | time | peak RSS | "
          f"{args.rows:,}-row table total | time | peak RSS |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, run in engines.items():
        first = run(small, "Calc", small_cells)
        second = run(big, "Data", [(2, 5)])
        if "error" in first:
            print(f"| {name} | not run: {first['error']} | | | | | |")
            continue
        good = sum(cases.matches(v, e) for v, (_, _, e) in zip(first["values"], cases.CASES, strict=True))
        right = "error" not in second and cases.matches(second["values"][0], total)
        shown = "right" if right else f"wrong or none ({second.get('values', second.get('error'))})"
        print(f"| {name} | {good} | {first['seconds']} s | {first['peak_rss_mb']} MB | {shown} | "
              f"{second.get('seconds', '-')} s | {second.get('peak_rss_mb', '-')} MB |")  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
