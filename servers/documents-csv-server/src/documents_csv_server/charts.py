"""Charts of a profile, drawn with matplotlib's object API (pyplot's global state is not thread-safe)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
from gaia_kit import atomic_write
from gaia_kit.core.quota import make_dirs
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .profile import Profile

MAX_HISTOGRAMS = 6
MAX_BAR_CHARTS = 4
MAX_HEATMAP_COLUMNS = 20


def draw(profile: Profile, folder: Path) -> list[Path]:
    """Histograms of numeric columns, bars of the commonest values, and a correlation heatmap."""
    make_dirs(folder)  # beneath the workspace: a link planted on the way is refused, not followed
    written: list[Path] = []
    position = {c.name: i + 1 for i, c in enumerate(profile.columns)}
    numeric = {
        c.name: _numbers(profile.sample, c.name) for c in profile.columns if c.kind in ("integer", "float")
    }
    numeric = {name: values for name, values in numeric.items() if len(values)}
    where = "all rows" if profile.sample_is_complete else f"a uniform sample of {len(profile.sample):,} rows"
    for name, values in list(numeric.items())[:MAX_HISTOGRAMS]:
        figure = Figure(figsize=(7, 4.5))
        axes = figure.add_subplot()
        axes.hist(values, bins=min(50, max(5, int(np.sqrt(len(values))))), color="#4C72B0", edgecolor="white")
        axes.set(title=f"Distribution of {name} ({where})", xlabel=name, ylabel="rows")
        written.append(_save(figure, folder / f"hist_{position[name]:02d}_{_slug(name)}.png"))
    categorical = [
        c
        for c in profile.columns
        if c.counts and 2 <= len(c.counts) <= 50 and c.kind in ("text", "boolean", "mixed")
    ]
    for column in categorical[:MAX_BAR_CHARTS]:
        top = sorted(column.counts.items(), key=lambda item: -item[1])[:15]
        figure = Figure(figsize=(7, 4.5))
        axes = figure.add_subplot()
        axes.barh([str(value)[:30] for value, _ in reversed(top)], [count for _, count in reversed(top)])
        axes.set(title=f"Most common values of {column.name}", xlabel="rows")
        written.append(
            _save(figure, folder / f"top_values_{position[column.name]:02d}_{_slug(column.name)}.png")
        )
    if len(numeric) >= 2:
        frame = pd.DataFrame({name: _numbers(profile.sample, name, keep_rows=True) for name in numeric})
        frame = frame.iloc[:, :MAX_HEATMAP_COLUMNS]
        matrix = frame.corr()
        size = len(matrix)
        figure = Figure(figsize=(max(5.0, 1.5 + 0.6 * size), max(4.0, 1.0 + 0.6 * size)))
        axes = figure.add_subplot()
        image = axes.imshow(matrix.to_numpy(), cmap="coolwarm", vmin=-1, vmax=1)
        labels = [str(name)[:20] for name in matrix.columns]
        axes.set_xticks(range(size), labels, rotation=45, ha="right")
        axes.set_yticks(range(size), labels)
        axes.set_title(f"Correlation ({where})")
        if size <= 10:
            for (i, j), value in np.ndenumerate(matrix.to_numpy()):
                axes.text(
                    j, i, "" if np.isnan(value) else f"{value:.2f}", ha="center", va="center", fontsize=8
                )
        figure.colorbar(image, ax=axes)
        written.append(_save(figure, folder / "correlation.png"))
    return written


def _numbers(sample: pd.DataFrame, name: str, keep_rows: bool = False):
    if name not in sample.columns:
        return np.empty(0) if not keep_rows else pd.Series(np.nan, index=sample.index)
    values = pd.to_numeric(sample[name], errors="coerce")
    return values if keep_rows else values.dropna().to_numpy(dtype="float64")


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    atomic_write(path, buffer.getvalue())
    return path


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[:60] or "column"
