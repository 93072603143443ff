"""A CSV profile computed in one streaming pass, in memory bounded by the chunk size.

pandas reads the file in chunks; each chunk updates per-column aggregates (exact counts, sums,
mean and variance by Chan's parallel formula, min/max, bounded value counts) and a uniform row
sample (bottom-k random keys) from which quartiles, histograms and correlations are estimated.
Nothing keeps a reference to a chunk once it has been folded in.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from gaia_kit import ToolFailure
from gaia_kit.core.limits import open_line_limited

from .sniff import Layout

CHUNK_TARGET_BYTES = 16 << 20
SAMPLE_TARGET_BYTES = 32 << 20
PREVIEW_ROWS = 10
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?")


@dataclass
class Numeric:
    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    total: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf
    integral: bool = True

    def add(self, values: np.ndarray) -> None:
        values = values[np.isfinite(values)]
        n = len(values)
        if not n:
            return
        mean = float(values.mean())
        m2 = float(((values - mean) ** 2).sum())
        combined = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / combined
        self.m2 += m2 + delta * delta * self.count * n / combined
        self.count = combined
        self.total = math.fsum((self.total, float(values.sum())))
        self.minimum = min(self.minimum, float(values.min()))
        self.maximum = max(self.maximum, float(values.max()))
        if self.integral and not np.all(np.floor(values) == values):
            self.integral = False

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else math.nan


@dataclass
class Column:
    name: str
    distinct_cap: int
    non_null: int = 0
    numeric: Numeric = field(default_factory=Numeric)
    text_values: int = 0
    counts: dict[object, int] | None = field(default_factory=dict)
    """Exact value counts, or None once there were more distinct values than `distinct_cap`."""
    date_like: bool | None = None
    earliest: str | None = None
    latest: str | None = None
    dtypes: set[str] = field(default_factory=set)
    profiled: bool = False

    @property
    def kind(self) -> str:
        if self.non_null == 0:
            return "empty"
        if not self.profiled:
            return _kind_from_dtypes(self.dtypes)
        if self.text_values == 0:
            return "integer" if self.numeric.integral else "float"
        if self.counts is not None and self.numeric.count == 0 and set(self.counts) <= {True, False}:
            return "boolean"
        if self.date_like and self.numeric.count == 0:
            return "datetime" if self.latest and len(self.latest) > 10 else "date"
        return "text" if self.numeric.count == 0 else "mixed"


def _kind_from_dtypes(dtypes: set[str]) -> str:
    # Without statistics only pandas' per-chunk dtypes are known: the widest one wins.
    if dtypes <= {"bool"}:
        return "boolean"
    if all(d.startswith("int") for d in dtypes):
        return "integer"
    if all(d.startswith(("int", "float")) for d in dtypes):
        return "float"
    return "text"


@dataclass
class Profile:
    columns: list[Column]
    rows: int
    preview: pd.DataFrame
    sample: pd.DataFrame
    sample_is_complete: bool
    limited_by_max_rows: bool
    skipped_bad_lines: str = ""
    replaced_bytes: bool = False


def profile(
    path: Path, shown: str, layout: Layout, max_rows: int | None, header: bool, statistics: bool
) -> Profile:
    """Profile the file (`shown`: its name as the agent sees it); retried leniently (skipping malformed rows, replacing bad bytes) if needed."""
    try:
        return _profile(path, shown, layout, max_rows, header, statistics, lenient=False)
    except pd.errors.EmptyDataError:
        raise ToolFailure("The file has no header or rows that could be read as a table.") from None
    except pd.errors.ParserError as exc:
        first_problem = _one_line(exc)
        result = _profile(path, shown, layout, max_rows, header, statistics, lenient=True)
        result.skipped_bad_lines = first_problem
        return result
    except UnicodeDecodeError as exc:
        if not layout.encoding_detected:
            raise ToolFailure(
                f"The file is not valid {layout.encoding} (byte {exc.start} of a chunk); pass another encoding "
                "or omit it to detect one."
            ) from None
        result = _profile(path, shown, layout, max_rows, header, statistics, lenient=True)
        result.replaced_bytes = True
        return result


def _profile(
    path: Path,
    shown: str,
    layout: Layout,
    max_rows: int | None,
    header: bool,
    statistics: bool,
    lenient: bool,
) -> Profile:
    chunk_rows = int(min(200_000, max(1_000, CHUNK_TARGET_BYTES / max(layout.sample_line_bytes, 1.0))))
    source = open_line_limited(path, shown)  # pandas holds a whole line at once: bound its length
    reader = pd.read_csv(
        source,
        sep=layout.delimiter,
        encoding=layout.encoding,
        encoding_errors="replace" if lenient else "strict",
        on_bad_lines="skip" if lenient else "error",
        skipinitialspace=layout.skipinitialspace,
        header=0 if header else None,
        index_col=False,
        chunksize=chunk_rows,
        nrows=max_rows,
        engine="c",
        # Chunks are already bounded; parsing each whole gives one dtype per column per chunk.
        low_memory=False,
    )
    rng = np.random.default_rng(0)  # a fixed seed: the same file always gives the same estimates
    columns: list[Column] = []
    preview = pd.DataFrame()
    sample = pd.DataFrame()
    sample_keys = np.empty(0)
    sample_size = 0
    rows = 0
    with source, reader:
        for chunk in reader:
            if not columns:
                if not header:
                    chunk.columns = [f"column_{i + 1}" for i in range(chunk.shape[1])]
                names = [str(name) for name in chunk.columns]
                cap = max(1_000, min(10_000, 200_000 // max(1, len(names))))
                columns = [Column(name, cap, profiled=statistics) for name in names]
                preview = chunk.head(PREVIEW_ROWS).copy()
                sample_size = int(
                    max(1_000, min(100_000, SAMPLE_TARGET_BYTES / max(layout.sample_line_bytes, 1.0)))
                )
            elif not header:
                chunk.columns = preview.columns
            rows += len(chunk)
            for column, name in zip(columns, chunk.columns, strict=True):
                series = chunk[name]
                column.dtypes.add(str(series.dtype))
                if statistics:
                    _fold(column, series)
                else:
                    column.non_null += int(series.count())
            if statistics:
                numeric = [
                    name for column, name in zip(columns, chunk.columns, strict=True) if column.numeric.count
                ]
                sample, sample_keys = _resample(sample, sample_keys, chunk[numeric], rng, sample_size)
            del chunk
    if not columns:
        raise ToolFailure("The file has no rows or columns that could be read as a table.")
    return Profile(
        columns=columns,
        rows=rows,
        preview=preview,
        sample=sample,
        sample_is_complete=len(sample) == rows,
        limited_by_max_rows=max_rows is not None and rows >= max_rows,
    )


def _fold(column: Column, series: pd.Series) -> None:
    present = series.dropna()
    column.non_null += len(present)
    if len(present):
        _fold_values(column, present)


def _fold_values(column: Column, present: pd.Series) -> None:
    if pd.api.types.is_bool_dtype(present.dtype):
        column.text_values += len(present)
        _count(column, present)
        return
    if pd.api.types.is_numeric_dtype(present.dtype):
        column.numeric.add(present.to_numpy(dtype="float64", copy=False))
        _count(column, present)
        return
    if column.text_values == 0 or column.numeric.count:
        # Until a column has shown only text, numbers stored as text (one stray value makes pandas
        # read a whole chunk as text) still count as numbers.
        numbers = pd.to_numeric(present, errors="coerce")
        is_number = numbers.notna().to_numpy()
        if is_number.any():
            column.numeric.add(numbers[is_number].to_numpy(dtype="float64"))
            _count(column, numbers[is_number])
            if is_number.all():
                return
            present = present[~is_number]
    column.text_values += len(present)
    _track_dates(column, present)
    _count(column, present)


def _count(column: Column, values: pd.Series) -> None:
    if column.counts is None:
        return
    for value, count in values.value_counts(sort=False).items():
        column.counts[value] = column.counts.get(value, 0) + int(count)
    if len(column.counts) > column.distinct_cap:
        # Counting every distinct value of an id-like column would grow without bound.
        column.counts = None


def _track_dates(column: Column, values: pd.Series) -> None:
    if column.date_like is False:
        return
    strings = values.astype(str)
    if not strings.str.fullmatch(_ISO_DATE).all():
        column.date_like = False
        return
    column.date_like = True
    # ISO 8601 strings of one shape sort in time order, so min/max need no parsing.
    low, high = strings.min(), strings.max()
    column.earliest = low if column.earliest is None else min(column.earliest, low)
    column.latest = high if column.latest is None else max(column.latest, high)


def _resample(
    sample: pd.DataFrame, keys: np.ndarray, chunk: pd.DataFrame, rng: np.random.Generator, size: int
) -> tuple[pd.DataFrame, np.ndarray]:
    """Bottom-k sampling: every row gets a random key and the `size` smallest keys are kept, which
    is a uniform sample of all rows seen, however many chunks they came in."""
    chunk_keys = rng.random(len(chunk))
    if len(sample) >= size:
        keep = chunk_keys < keys.max()
        if not keep.any():
            return sample, keys
        chunk, chunk_keys = chunk[keep], chunk_keys[keep]
    merged = pd.concat([sample, chunk], ignore_index=True) if len(sample) else chunk.reset_index(drop=True)
    merged_keys = np.concatenate([keys, chunk_keys])
    if len(merged) > size:
        best = np.argpartition(merged_keys, size - 1)[:size]
        best.sort()
        merged, merged_keys = merged.iloc[best].reset_index(drop=True), merged_keys[best]
    return merged, merged_keys


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__
