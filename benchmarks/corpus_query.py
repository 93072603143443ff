"""Offline index query latency: p50/p95 of Corpus.search on a generated corpus (target p50 < 20 ms).

Documents of ~200 words drawn from a Zipf-distributed vocabulary (as real text is), built through
gaia_kit.pages.corpus.build_documents (the same streaming path `gaia-env corpus build` uses); queries of
1-4 words drawn from the same distribution, so most mix common and rarer words.

    uv run python -m benchmarks.corpus_query [--documents 100000] [--queries 500]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from gaia_kit.pages.corpus import Corpus, Source, build_documents

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "ze",
    "an",
    "el",
    "or",
    "um",
    "is",
    "pra",
    "stel",
]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def zipf_sampler(words: list[str], rng: random.Random, s: float = 1.07):
    weights = [1 / (rank**s) for rank in range(1, len(words) + 1)]
    return lambda k: rng.choices(words, weights=weights, k=k)


def documents(count: int, sample) -> Iterator[Source]:
    for n in range(count):
        title = " ".join(sample(3)).title()
        text = " ".join(sample(200))
        yield Source(f"https://bench.example/doc/{n}", f"doc/{n}", title, text)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--index", type=Path, help="reuse or keep the index here (built when missing)")
    args = parser.parse_args()
    rng = random.Random(7)
    sample = zipf_sampler(vocabulary(args.vocabulary, rng), rng)
    index = args.index or Path(tempfile.mkdtemp(prefix="gaia-corpus-")) / "bench.sqlite"
    build_s = None
    if not index.exists():
        started = time.perf_counter()
        report = build_documents(
            documents(args.documents, sample), index, {"source": "generated", "kind": "bench"}
        )
        build_s = time.perf_counter() - started
        assert report.documents == args.documents
    corpus = Corpus.open(index)
    queries = [" ".join(sample(rng.randint(1, 4))) for _ in range(args.queries)]
    for query in queries[:50]:  # warm the page cache, as a long-running server's is
        corpus.search(query, 10)
    latencies, empty = [], 0
    for query in queries:
        started = time.perf_counter()
        hits = corpus.search(query, 10)
        latencies.append((time.perf_counter() - started) * 1000)
        empty += not hits
    result = {
        "documents": corpus.stats()["documents"],
        "index_mb": round(index.stat().st_size / 2**20, 1),
        "build_s": round(build_s, 1) if build_s is not None else None,
        "queries": len(queries),
        "queries_without_hits": empty,
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "max_ms": round(max(latencies), 2),
        "target_p50_ms": 20,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
