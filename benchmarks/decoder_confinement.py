"""What confining external decoders costs: each job run directly and confined (bubblewrap, only its
files visible, no network; gaia_kit.execution.confine), alternately, median wall time and the ratio.

uv run python -m benchmarks.decoder_confinement [--runs 15] [--office-runs 4]
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gaia_kit.execution.confine import run_confined
from gaia_kit.execution.process import run_in_group


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, capture_output=True)


def page_png() -> bytes:
    from PIL import Image, ImageDraw

    picture = Image.new("L", (1275, 550), 255)
    draw = ImageDraw.Draw(picture)
    for line in range(10):
        draw.text((60, 40 + line * 50), f"Line {line}: the museum opens on Monday morning.", fill=0)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    return buffer.getvalue()


def jobs(folder: Path) -> dict[str, tuple[list[str], dict]]:
    """name -> (argv, keyword arguments for run_confined: the files it reads and writes)."""
    audio, docx_path, out = folder / "talk.mp3", folder / "report.docx", folder / "out"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=60", str(audio))
    import docx

    document = docx.Document()
    for n in range(20):
        document.add_paragraph(f"Paragraph {n}: the museum sold {n * 17} tickets.")
    document.save(docx_path)
    out.mkdir()
    profile = folder / "profile"
    profile.mkdir()
    return {
        "ffprobe, 60 s MP3": (
            ["ffprobe", "-v", "error", "-show_format", "-show_streams", str(audio)],
            {"reads": [audio]},
        ),
        "ffmpeg decode, 60 s MP3 to 16 kHz PCM": (
            ["ffmpeg", "-v", "error", "-i", str(audio), "-ac", "1", "-ar", "16000", "-f", "f32le", "-"],
            {"reads": [audio]},
        ),
        "tesseract, one 10-line picture on stdin": (
            ["tesseract", "stdin", "stdout", "-l", "eng"],
            {"input": page_png(), "env": {"OMP_THREAD_LIMIT": "1"}},
        ),
        "LibreOffice, docx to PDF": (
            ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore"]
            + ["--convert-to", "pdf", "--outdir", str(out), str(docx_path)],
            {
                "reads": [docx_path, Path("/etc/libreoffice")],
                "writes": [out, profile],
                "env": {"HOME": str(profile)},
            },
        ),
    }


def timed(run: Callable[..., subprocess.CompletedProcess[bytes]], argv: list[str], **kw: object) -> float:
    started = time.perf_counter()
    done = run(argv, timeout=300, **kw)
    assert done.returncode == 0, done.stderr[-500:]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--office-runs", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="decoder-bench-") as root:
        print("| job | direct, median | confined, median | ratio |")
        print("|---|---|---|---|")
        for name, (argv, extra) in jobs(Path(root)).items():
            direct_kw = {k: v for k, v in extra.items() if k in ("input", "env")}
            runs = args.office_runs if name.startswith("LibreOffice") else args.runs
            direct, confined = [], []
            for _ in range(runs):  # alternately, so both see the same machine load
                direct.append(timed(run_in_group, argv, **direct_kw))
                confined.append(timed(run_confined, argv, **extra))
            a, b = statistics.median(direct), statistics.median(confined)
            print(f"| {name} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {b / a:.2f} |")


if __name__ == "__main__":
    main()
