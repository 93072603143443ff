"""OCR with the tesseract binary: preprocessing in Pillow, recognition in a subprocess with a deadline.

Tesseract runs as a child in its own process group, so a page that makes it spin is killed at the
deadline instead of holding a worker thread, and a cancelled call leaves no process behind.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gaia_kit import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.execution.confine import run_confined
from gaia_kit.media.images import flattened
from PIL import Image, ImageOps, ImageStat

from .settings import ImageSettings

# Tesseract reads text best at a cap height of 20-40 px; screenshot text is often 8-12 px high.
UPSCALE_BELOW_PIXELS = 2_500_000
MAX_UPSCALED_SIDE = 6000
MISSING = "OCR needs tesseract, which is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)."
LANGUAGE = re.compile(r"^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*$")


@dataclass
class Word:
    text: str
    left: int
    top: int
    width: int
    height: int
    confidence: float


@dataclass
class Reading:
    text: str
    words: list[Word]
    scale: float


def tesseract_binary() -> str | None:
    return shutil.which("tesseract")


@lru_cache(maxsize=1)
def installed_languages() -> tuple[str, ...]:
    """The language packs tesseract has (eng, osd, ...); empty when tesseract is missing."""
    binary = tesseract_binary()
    if binary is None:
        return ()
    done = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30)
    lines = (done.stdout or done.stderr).splitlines()
    return tuple(sorted(line.strip() for line in lines[1:] if line.strip()))


def check_language(language: str) -> str:
    """`language` as tesseract takes it ('eng', 'eng+fra'), or a sentence naming what is installed."""
    if tesseract_binary() is None:
        raise ToolFailure(MISSING)
    language = language.strip() or "eng"
    if not LANGUAGE.match(language):
        raise ToolFailure(f"language={language!r} is not a tesseract language code; use 'eng' or 'eng+fra'.")
    have = installed_languages()
    missing = [code for code in language.split("+") if code not in have]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code.lower().replace('_', '-')}" for code in missing)
        raise ToolFailure(
            f"The OCR language {', '.join(missing)} is not installed (installed: {', '.join(have) or 'none'}); "
            f"use one of those, or install it (apt-get install {packages})."
        )
    return language


def prepare(image: Image.Image) -> tuple[Image.Image, float]:
    """Grayscale, light text on dark turned dark on light, small images upscaled; returns the scale."""
    gray = flattened(image, "L")
    if ImageStat.Stat(gray).mean[0] < 110:  # dark-mode screenshots: tesseract is trained on dark ink
        gray = ImageOps.invert(gray)
    gray = ImageOps.autocontrast(gray, cutoff=1)
    scale = 1.0
    width, height = gray.size
    if width * height < UPSCALE_BELOW_PIXELS:
        scale = min(
            3.0, (UPSCALE_BELOW_PIXELS / (width * height)) ** 0.5, MAX_UPSCALED_SIDE / max(width, height)
        )
        scale = max(scale, 1.0)
        if scale > 1.2:
            gray = gray.resize((round(width * scale), round(height * scale)), Image.Resampling.LANCZOS)
        else:
            scale = 1.0
    return gray, scale


def recognise(image: Image.Image, language: str, preprocess: bool, name: str) -> Reading:
    """Read the text of `image`; word boxes are in the original image's pixels."""
    binary = tesseract_binary()
    if binary is None:
        raise ToolFailure(MISSING)
    picture, scale = prepare(image) if preprocess else (flattened(image), 1.0)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG", compress_level=1)  # fast: tesseract decodes it at once
    # One thread per tesseract: replicas and concurrent calls are the parallelism, not OpenMP.
    env = {"OMP_THREAD_LIMIT": "1"}
    deadline_s = settings(ImageSettings).ocr_timeout
    # tesseract's own variable, passed through: confined, it can read only the folder this names.
    tessdata = os.environ.get("TESSDATA_PREFIX")
    if tessdata:
        env["TESSDATA_PREFIX"] = tessdata
    try:
        # The picture arrives on stdin; confined, tesseract sees no file of the host and no network.
        done = run_confined(
            [binary, "stdin", "stdout", "-l", language, "--psm", "3", "tsv"],
            reads=[Path(tessdata)] if tessdata else [],
            timeout=deadline_s,
            env=env,
            input=buffer.getvalue(),
        )
    except subprocess.TimeoutExpired:
        raise ToolFailure(
            f"OCR of {name} took longer than {deadline_s:.0f} s and was stopped (IMAGE_OCR_TIMEOUT); "
            "crop the image to the part with the text."
        ) from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [
            f"exit {done.returncode}"
        ]
        raise ToolFailure(f"tesseract could not read {name} ({detail[0][:200]}).")
    out = done.stdout
    return _parse_tsv(out.decode("utf-8", "replace"), scale)


def _parse_tsv(tsv: str, scale: float) -> Reading:
    """Lines from tesseract's word table; a blank line between blocks and paragraphs."""
    words: list[Word] = []
    lines: list[str] = []
    current: tuple[str, str, str] | None = None
    paragraph: tuple[str, str] | None = None
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        key = (row["block_num"], row["par_num"], row["line_num"])
        if key != current:
            if paragraph is not None and key[:2] != paragraph:
                lines.append("")
            lines.append(text)
            current, paragraph = key, key[:2]
        else:
            lines[-1] += " " + text
        box = [round(int(row[k]) / scale) for k in ("left", "top", "width", "height")]
        words.append(Word(text, *box, confidence=float(row["conf"])))
    return Reading(text="\n".join(lines).strip(), words=words, scale=scale)
