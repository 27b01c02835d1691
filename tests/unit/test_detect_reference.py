"""The vectorised judge equals a plain per-pair reading of its documented rules, on a demo fleet's
candidate pairs: the optimisations (features once per text, costly measures only where they can
matter, pairs generated once) change the speed, never the verdicts."""

from __future__ import annotations

import re
from datetime import date, datetime

import polars as pl

from memcurator import demo, ingest, store, text
from memcurator.config import CurationConfig
from memcurator.contradictions import keep_candidate_pairs
from memcurator.detect import (ANTONYM_MAP, CHANGE, IDENTIFIER, NEGATION_CUES, STOPWORDS, VALUE_WORDS, JudgeSettings,
                               _STEM, judge)
from memcurator.night import STEPS

NUM = re.compile(r"^\d+(\.\d+)?$")


def _tokens(text: str) -> list[str]:
    text = text.lower().replace("n't", " not")
    text = re.sub(r"n't\b", " not", text)
    text = re.sub(r"\bno one\b", " noone", text)
    text = re.sub(r"\bno longer\b", " not longer", text)
    return re.findall(r"[a-z]+|\d+(?:\.\d+)?", text)


def reference(a: str, b: str, s: JudgeSettings = JudgeSettings()) -> str | None:
    ta, tb = _tokens(a), _tokens(b)
    drop = STOPWORDS | set(NEGATION_CUES)
    ca = {_STEM.stemWord(t) for t in ta} - drop
    cb = {_STEM.stemWord(t) for t in tb} - drop
    va = {t for t in ta if NUM.match(t) or t in VALUE_WORDS}
    vb = {t for t in tb if NUM.match(t) or t in VALUE_WORDS}
    na = {t for t in ca if not NUM.match(t) and t not in VALUE_WORDS}
    nb = {t for t in cb if not NUM.match(t) and t not in VALUE_WORDS}
    ida = set(re.findall(IDENTIFIER, a.lower()))
    idb = set(re.findall(IDENTIFIER, b.lower()))
    inter, union = len(ca & cb), len(ca | cb)
    overlap = inter / union if union else 0.0
    containment = inter / min(len(ca), len(cb)) if min(len(ca), len(cb)) else 0.0
    rest = len(na & nb) / len(na | nb) if na | nb else 0.0
    negated_a = any(t in NEGATION_CUES for t in ta)
    negated_b = any(t in NEGATION_CUES for t in tb)
    anto = {ANTONYM_MAP[t] for t in ca if t in ANTONYM_MAP} - ca
    anto &= cb - ca
    change = bool(re.search(CHANGE, a.lower()) or re.search(CHANGE, b.lower()))
    if va and vb and va != vb and rest >= s.value_overlap and ida == idb:
        return "value"
    if negated_a != negated_b and (overlap >= s.negation_overlap or containment >= s.negation_containment):
        return "negation"
    if anto and (inter + 2 * len(anto)) / max(union, 1) >= s.antonym_overlap:
        return "antonym"
    if change and overlap >= s.change_overlap:
        return "change"
    return None


def _reference_pairs(entries: pl.DataFrame, similar: pl.DataFrame) -> set[tuple]:
    """Every pair sharing a subject key (groups up to the cap) or verified similar, older side first."""
    from memcurator.contradictions import SUBJECT_GROUP_CAP

    when = {(r["namespace"], r["entry_id"]): r["first_written_at"] for r in entries.iter_rows(named=True)}
    groups: dict[tuple, list[str]] = {}
    for r in entries.iter_rows(named=True):
        if r["tags"]:
            groups.setdefault((r["namespace"], "\x1f".join(sorted(r["tags"]))), []).append(r["entry_id"])
    orient = lambda ns, x, y: (x, y) if (when[(ns, x)], x) < (when[(ns, y)], y) else (y, x)  # noqa: E731
    out: dict[tuple, bool] = {}
    for (ns, _), members in groups.items():
        if len(members) <= SUBJECT_GROUP_CAP:
            for i, x in enumerate(members):
                for y in members[i + 1:]:
                    out[(ns, *orient(ns, x, y))] = True
    for ns, x, y in similar.iter_rows():
        out.setdefault((ns, *orient(ns, x, y)), False)
    return {(ns, a, b, same) for (ns, a, b), same in out.items()}


def test_vectorised_judge_equals_the_per_pair_reading_on_a_fleet(home, conn, monkeypatch):
    demo.generate(home.landing, home.truth, writes=3_000, namespaces=3, days=30, seed=9, end=date(2026, 11, 28))
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    as_of = datetime(2026, 11, 29)
    for name, build in STEPS:
        build(conn, as_of, CurationConfig())
        if name == "core.near_duplicate_pairs":
            break
    entries = conn.execute("select namespace, entry_id, text, tags, first_written_at from core.entries").pl()
    similar = conn.execute("select namespace, entry_a, entry_b from core.near_duplicate_pairs").pl()
    keep_candidate_pairs(conn, as_of)
    pairs = conn.execute("select namespace, entry_a, entry_b, same_subject from core.contradiction_candidates").pl()
    assert pairs.height > 10_000
    assert set(pairs.iter_rows()) == _reference_pairs(entries, similar)
    texts = entries.select("namespace", "entry_id", "text")
    pairs = (pairs.join(texts.rename({"entry_id": "entry_a", "text": "text_a"}), on=["namespace", "entry_a"])
             .join(texts.rename({"entry_id": "entry_b", "text": "text_b"}), on=["namespace", "entry_b"]))
    want = [reference(a, b) for a, b in zip(pairs["text_a"], pairs["text_b"])]
    assert sum(k is not None for k in want) > 50  # the fleet has conflicts of several kinds
    for use_compiled in (True, False):  # the texts' features read by the compiled scan, then by polars
        monkeypatch.setattr(text, "compiled", lambda batch, choice=None, use=use_compiled: use)
        assert judge(pairs)["kind"].to_list() == want, f"compiled={use_compiled}"
