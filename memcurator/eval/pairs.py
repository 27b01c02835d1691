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
    a = shingle_column(pairs["text_a"], words, drop_stopwords)
    b = shingle_column(pairs["text_b"], words, drop_stopwords)
    frame = pl.DataFrame({"a": a, "b": b})
    inter = frame.select(pl.col("a").list.set_intersection("b").list.len()).to_series().to_numpy()
    union = frame.select(pl.col("a").list.set_union("b").list.len()).to_series().to_numpy()
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def prf(predicted: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    tp = int(np.sum(predicted & actual))
    fp = int(np.sum(predicted & ~actual))
    fn = int(np.sum(~predicted & actual))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def _prf_dict(pred, act) -> dict:
    return prf(np.asarray(pred, dtype=bool), np.asarray(act, dtype=bool))


def run_sick(paths: list[Path]):
    """Contradiction detection on SICK: raw = the plain negation rule (one side negated, word
    Jaccard >= 0.5); curated = memcurator's judge. Also the judge's false flags on entailment pairs."""
    from memcurator.detect import judge
    from memcurator.eval.core import EvalResult

    df = load_sick(paths)
    actual = (df["label"] == "CONTRADICTION").to_numpy()
    ours = judge(df.select("text_a", "text_b"))["is_conflict"].to_numpy()
    baseline = _negation_baseline(df)
    result = EvalResult("sick", df.height, _prf_dict(baseline, actual), _prf_dict(ours, actual))
    entail = (df["label"] == "ENTAILMENT").to_numpy()
    result.curated["false_flags_on_entailment"] = round(float(ours[entail].mean()), 4)
    result.raw["false_flags_on_entailment"] = round(float(baseline[entail].mean()), 4)
    for source in df["source"].unique().sort().to_list():
        idx = (df["source"] == source).to_numpy()
        result.by_category[source] = {"n": int(idx.sum()), "raw": _prf_dict(baseline[idx], actual[idx]),
                                      "curated": _prf_dict(ours[idx], actual[idx])}
    result.notes.append("raw = plain negation rule (one side has not/no/never/nobody/n't, word Jaccard >= 0.5); "
                        "curated = memcurator.detect.judge (thresholds calibrated on SICK train)")
    return result


def _negation_baseline(df: pl.DataFrame) -> np.ndarray:
    neg = r"(?i)\b(not|no|never|nobody|none|nothing)\b|n't"
    a = df["text_a"].str.contains(neg).to_numpy()
    b = df["text_b"].str.contains(neg).to_numpy()
    return (a != b) & (jaccard_column(df, 1, False) >= 0.5)


def run_near_duplicates(name: str, df: pl.DataFrame):
    """Near-duplicate pairs: raw = word Jaccard over all words at 0.6; curated = the clustering's
    verification (function words dropped) at the configured threshold. Also the contradiction
    judge's false flags on duplicate pairs (a paraphrase must never be flagged)."""
    from memcurator.config import CurationConfig
    from memcurator.detect import judge
    from memcurator.eval.core import EvalResult

    cfg = CurationConfig()
    actual = df["duplicate"].to_numpy()
    raw = jaccard_column(df, 1, False) >= 0.6
    ours = jaccard_column(df, cfg.shingle_words, cfg.shingle_drop_stopwords) >= cfg.near_duplicate_threshold
    result = EvalResult(name, df.height, _prf_dict(raw, actual), _prf_dict(ours, actual))
    flags = judge(df.filter(pl.col("duplicate")).select("text_a", "text_b"))["is_conflict"].to_numpy()
    result.curated["false_contradiction_flags_on_duplicates"] = round(float(flags.mean()), 4) if len(flags) else 0.0
    for source in df["source"].unique().sort().to_list():
        idx = (df["source"] == source).to_numpy()
        result.by_category[source] = {"n": int(idx.sum()), "raw": _prf_dict(raw[idx], actual[idx]),
                                      "curated": _prf_dict(ours[idx], actual[idx])}
    result.notes.append(f"raw = word Jaccard >= 0.6 over all words; curated = shingles of {cfg.shingle_words} word(s), "
                        f"function words dropped = {cfg.shingle_drop_stopwords}, Jaccard >= {cfg.near_duplicate_threshold} "
                        "(the exact verification every LSH candidate passes)")
    return result
