"""SituatedQA temporal: facts that changed; does the current fact beat the stale one?

Conversion: every question whose answer changed becomes two writes in one namespace, the previous
answer at its start date and the current answer at its start date (``valid_from`` = the start
date, no ``valid_until``), each phrased with a different template drawn from several (seeded),
none of them saying which is newer; both carry the question's subject key as a tag (a writer knows
what its note is about). Questions whose answer did not change are distractors, written once at a
seeded date. Events land in a seeded shuffled order.

Metrics: current-beats-stale (the current fact ranks above the stale one for the question, as of
after the last start date); as-of accuracy@1 (the dataset's dated questions, recalled as of the
end of that year: is the top fact the one valid then); supersession detection precision and
recall over the changed pairs. Raw = BM25 over every fact, no validity, no conflicts.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from datetime import datetime
from pathlib import Path

from memcurator import store
from memcurator.config import CurationConfig
from memcurator.eval.core import EvalResult, Workspace
from memcurator.recall import recall

NAMESPACE = "situatedqa"
TEMPLATES = [
    "{q}? {a}.",
    "Regarding {q}: {a}.",
    "{a} is the answer to: {q}",
    "Q: {q} A: {a}",
    "For the question '{q}', the answer is {a}.",
    "{q} - {a}",
]


def _rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt") if path.name.endswith(".gz") else path.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _date(start: dict | None) -> datetime | None:
    if not start or not start.get("year"):
        return None
    return datetime(int(start["year"]), int(start.get("month") or 1), int(start.get("date") or 1))


def _subject(question: str) -> str:
    return "q-" + hashlib.sha256(question.encode()).hexdigest()[:12]


def convert(raw_rows: list[dict], seed: int) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    events, changed = [], []
    for i, row in enumerate(raw_rows):
        q = row["question"].strip()
        timeline = (row.get("timelines") or [None])[0]
        if timeline and timeline.get("prev_answers") and _date(timeline.get("prev_start")) and _date(timeline.get("cur_start")):
            prev_t, cur_t = rng.sample(TEMPLATES, 2)
            ids = {}
            for side, template, answer, start in (
                ("prev", prev_t, timeline["prev_answers_full"] or timeline["prev_answers"][0], _date(timeline["prev_start"])),
                ("cur", cur_t, timeline["cur_answers_full"] or timeline["cur_answers"][0], _date(timeline["cur_start"])),
            ):
                entry_id = "f" + hashlib.sha256(f"{i}|{side}".encode()).hexdigest()[:16]
                ids[side] = entry_id
                events.append({"id": "e" + entry_id, "type": "memory.write", "ts": start.isoformat() + "Z",
                               "namespace": NAMESPACE, "actor": "import",
                               "data": {"entry_id": entry_id, "text": template.format(q=q, a=answer), "class": "relationship",
                                        "valid_from": start.isoformat() + "Z", "tags": [_subject(q)]}})
            changed.append({"question": q, "prev": ids["prev"], "cur": ids["cur"], "id": row["id"],
                            "prev_start": _date(timeline["prev_start"]), "cur_start": _date(timeline["cur_start"])})
        elif not timeline and row.get("nq_answers"):
            entry_id = "d" + hashlib.sha256(f"{i}".encode()).hexdigest()[:16]
            ts = datetime(rng.randint(1995, 2019), rng.randint(1, 12), rng.randint(1, 28))
            events.append({"id": "e" + entry_id, "type": "memory.write", "ts": ts.isoformat() + "Z", "namespace": NAMESPACE,
                           "actor": "import", "data": {"entry_id": entry_id, "class": "relationship", "tags": [_subject(q)],
                                                       "text": rng.choice(TEMPLATES).format(q=q, a=row["nq_answers"][0])}})
    return events, changed


def run(paths: list[Path], seed: int = 17) -> EvalResult:
    raw_rows = _rows(paths[0])
    qa_rows = _rows(paths[1]) if len(paths) > 1 else []
    events, changed = convert(raw_rows, seed)
    last = max(datetime.fromisoformat(e["ts"].rstrip("Z")) for e in events)
    as_of = datetime(last.year + 1, 1, 1)
    # historical facts: the ingest window opens in year 1000 for this import
    cfg = CurationConfig(earliest_timestamp="1000-01-01")
    by_id = {c["id"]: c for c in changed}
    with Workspace() as ws:
        ws.land(events, seed)
        path = ws.build(as_of, cfg)
        beats = {"raw": 0, "curated": 0}
        for c in changed:
            for mode in beats:
                order = [h.entry_id for h in recall(c["question"], NAMESPACE, path, k=10, mode=mode)]
                if c["cur"] in order and (c["prev"] not in order or order.index(c["cur"]) < order.index(c["prev"])):
                    beats[mode] += 1
        dated = [r for r in qa_rows if r["id"] in by_id and str(r.get("date", "")).isdigit()]
        correct = {"raw": 0, "curated": 0}
        for r in dated:
            c = by_id[r["id"]]
            year_end = datetime(int(r["date"]), 12, 31, 23, 59)
            want = c["cur"] if year_end >= c["cur_start"] else c["prev"] if year_end >= c["prev_start"] else None
            raw_top = recall(c["question"], NAMESPACE, path, k=1, mode="raw")
            cur_top = recall(c["question"], NAMESPACE, path, k=1, as_of=year_end)
            correct["raw"] += bool(raw_top) and raw_top[0].entry_id == want
            correct["curated"] += bool(cur_top) and cur_top[0].entry_id == want
        with store.connect(path, read_only=True) as conn:
            detected = {(a, b) for a, b in conn.execute(
                "select least(entry_a, entry_b), greatest(entry_a, entry_b) from core.contradictions").fetchall()}
    truth = {(min(c["prev"], c["cur"]), max(c["prev"], c["cur"])) for c in changed}
    hit = len(detected & truth)
    n = len(changed)
    result = EvalResult("situatedqa", n,
                        {"current_beats_stale": round(beats["raw"] / n, 4),
                         "as_of_accuracy@1": round(correct["raw"] / max(len(dated), 1), 4)},
                        {"current_beats_stale": round(beats["curated"] / n, 4),
                         "as_of_accuracy@1": round(correct["curated"] / max(len(dated), 1), 4),
                         "supersession_precision": round(hit / len(detected), 4) if detected else 0.0,
                         "supersession_recall": round(hit / len(truth), 4) if truth else 0.0})
    result.notes.append(f"{n} changed facts (two writes each), {len(events) - 2 * n} unchanged distractors, "
                        f"{len(dated)} dated questions; templates {len(TEMPLATES)}, seed {seed}")
    return result
