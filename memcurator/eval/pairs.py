"""Labelled sentence pairs (MSRP, SemEval STS 2016, SICK): loaders and pair-level measurements.

Near-duplicate labels: MSRP quality 1 = paraphrase; STS score >= 4 = duplicate, <= 2 = not
(scores in between are left out); SICK relatedness >= 4 = duplicate, <= 2 = not.
Contradiction labels: SICK CONTRADICTION vs ENTAILMENT/NEUTRAL.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import polars as pl

from memcurator.text import shingle_column


def load_msrp(paths: list[Path]) -> pl.DataFrame:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8-sig") as fh:
            for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
                if len(r) == 5 and r[0] in ("0", "1"):
                    rows.append((r[3], r[4], r[0] == "1", path.name))
    return pl.DataFrame(rows, schema=["text_a", "text_b", "duplicate", "source"], orient="row")


def load_sts(paths: list[Path]) -> pl.DataFrame:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
                if len(r) >= 3 and r[0].strip():
                    score = float(r[0])
                    if score >= 4 or score <= 2:
                        rows.append((r[1], r[2], score >= 4, path.stem.replace(".test", "")))
    return pl.DataFrame(rows, schema=["text_a", "text_b", "duplicate", "source"], orient="row")


def load_sick(paths: list[Path]) -> pl.DataFrame:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            for r in csv.DictReader(fh, delimiter="\t"):
                score = float(r["relatedness_score"])
                rows.append((r["sentence_A"], r["sentence_B"], r["entailment_judgment"], score, path.name))
    return pl.DataFrame(rows, schema=["text_a", "text_b", "label", "relatedness", "source"], orient="row")


def jaccard_column(pairs: pl.DataFrame, words: int, drop_stopwords: bool = False) -> np.ndarray:
    """Exact shingle Jaccard per pair, as the clustering verifies it."""
    from memcurator.text import STOPWORDS

    a = shingle_column(pairs["text_a"], words, drop_stopwords)
    b = shingle_column(pairs["text_b"], words, drop_stopwords)
    frame = pl.DataFrame({"a": a, "b": b})
    inter = frame.select(pl.col("a").list.set_intersection("b").list.len()).to_series().to_numpy()
    union = frame.select(pl.col("a").list.set_union("b").list.len()).to_series().to_numpy()
    _ = STOPWORDS
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def prf(predicted: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    tp = int(np.sum(predicted & actual))
    fp = int(np.sum(predicted & ~actual))
    fn = int(np.sum(~predicted & actual))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
            "tp": tp, "fp": fp, "fn": fn}
