"""`gaia-train demo-data`: real attachments, known answers, the GAIA layout."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from gaia_train.cli import main
from gaia_train.data import gaia as ds
from gaia_train.demo import snapshot


def test_demo_snapshot_has_real_attachments_and_right_answers(tmp_path: Path) -> None:
    # make test installs espeak-ng (scripts/apt-packages.txt): a missing one is a failed install, not a skip.
    assert shutil.which("espeak-ng"), (
        "espeak-ng is missing: run `make system-deps` (apt-get install espeak-ng)"
    )
    assert main(["demo-data", "--out", str(tmp_path)]) == 0
    split = tmp_path / "2023" / "validation"
    rows = {r["task_id"]: r for r in map(json.loads, (split / "metadata.jsonl").read_text().splitlines())}
    by_key = {t.key: t for t in snapshot.DEMO_TASKS}
    assert len(rows) == len(by_key) == 7
    assert {r["Level"] for r in rows.values()} == {"1", "2", "3"}

    def attachment(key: str) -> Path:
        return split / rows[by_key[key].task_id]["file_name"]

    with attachment("csv-revenue").open() as handle:
        sales = list(csv.DictReader(handle))
    north = sum(int(r["units"]) * int(r["unit_price"]) for r in sales if r["region"] == "North")
    assert rows[by_key["csv-revenue"].task_id]["Final answer"] == str(north) == "3070"
    assert rows[by_key["csv-regions"].task_id]["Final answer"] == "East, North, South"

    from openpyxl import load_workbook

    sheet = load_workbook(attachment("xlsx-low-stock"))["Stock"]
    low = sum(1 for item, qty, wh in sheet.iter_rows(min_row=2, values_only=True) if wh == "B" and qty < 10)
    assert rows[by_key["xlsx-low-stock"].task_id]["Final answer"] == str(low) == "3"

    from docx import Document

    memo = "\n".join(p.text for p in Document(attachment("docx-codename")).paragraphs)
    assert "codename, Blue Heron" in memo
    pdf = attachment("pdf-boiling").read_bytes()
    assert pdf.startswith(b"%PDF") and b"Sample C boiled at 87.5 degrees Celsius." in pdf

    from PIL import Image

    assert Image.open(attachment("png-gate-code")).size == (900, 220)
    wav = attachment("wav-delivery").read_bytes()
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE" and len(wav) > 20_000

    test_rows = [
        json.loads(x) for x in (tmp_path / "2023" / "test" / "metadata.jsonl").read_text().splitlines()
    ]
    assert {r["Final answer"] for r in test_rows} == {"?"}

    # it is a valid snapshot for the dataset command
    written = ds.build(tmp_path, tmp_path / "parquet", test_size=2)
    assert sum(len(ds.read_rows(p)) for p in written.values()) == 7


def test_demo_parquet_metadata_without_audio(tmp_path: Path) -> None:
    tasks = snapshot.write_demo_snapshot(tmp_path, metadata_format="parquet", skip_audio=True)
    assert "wav" not in {t.extension for t in tasks}
    assert (tmp_path / "2023" / "validation" / "metadata.parquet").exists()
    assert len(ds.load_split(tmp_path, "validation")) == 6


def test_missing_espeak_names_the_package_and_writes_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(snapshot.shutil, "which", lambda name: None)
    assert main(["demo-data", "--out", str(tmp_path / "demo")]) == 1
    err = capsys.readouterr().err
    assert "apt-get install espeak-ng" in err and "--skip-audio" in err
    assert not (tmp_path / "demo" / "2023").exists()


def test_existing_snapshot_is_not_overwritten(tmp_path: Path) -> None:
    snapshot.write_demo_snapshot(tmp_path, skip_audio=True)
    with pytest.raises(snapshot.DemoDataError, match="already exists"):
        snapshot.write_demo_snapshot(tmp_path, skip_audio=True)
