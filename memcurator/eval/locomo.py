"""LoCoMo: long multi-session conversations; does curation keep the evidence findable?

Conversion (nothing from the QA side enters the log): each conversation is a namespace, each
session a run at its own date and time, each turn a ``memory.write`` of class ``relationship`` (a
statement a person made) whose text is "<speaker>: <turn>" plus the shared photo's caption when
there is one. Entry ids are opaque hashes; the map from dialog ids to entry ids is kept in memory
as gold. Every question is asked after the last session: raw (BM25 over every turn) and curated
(``recall()`` over the recall view) retrieve the top 10 and are scored against the evidence
dialog ids. Category 5 questions have no answer in the conversation: for them the report gives
the abstention rate instead, at the relevance threshold (``RecallSettings.min_relevance``) that
abstains on at most 5 % of the answerable questions, with the false abstention it costs and the
AUC of top relevance as a separator (0.5 = no signal; in-sample on the dev slice, for orientation).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from memcurator.eval.core import EvalResult, Workspace, retrieval_metrics
from memcurator.recall import RecallSettings, recall

ABSTAIN_CATEGORY = 5
K = 10
# How relevance and curation combine is measured, not assumed: each variant is scored every run.
VARIANTS = {
    "relevance only": RecallSettings(combine="relevance"),
    "blend (default)": RecallSettings(),
    "blend, session tier x0.8": RecallSettings(session_weight=0.8),
    "blend, curation weight 0.3": RecallSettings(curation_weight=0.3),
}


def _load(path: Path) -> list[dict]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _entry_id(namespace: str, dia_id: str) -> str:
    return "t" + hashlib.sha256(f"{namespace}\x1f{dia_id}".encode()).hexdigest()[:16]


def _session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def convert(conversations: list[dict]) -> tuple[list[dict], list[dict], datetime]:
    events, questions = [], []
    last = datetime.min
    for conv in conversations:
        ns = "locomo-" + conv["sample_id"]
        c = conv["conversation"]
        sessions = sorted((int(k.split("_")[1]), v) for k, v in c.items()
                          if k.startswith("session_") and not k.endswith("date_time") and isinstance(v, list))
        for number, turns in sessions:
            start = _session_time(c[f"session_{number}_date_time"])
            run = f"{ns}-session-{number}"
            events.append({"id": f"{run}-start", "type": "run.start", "ts": start.isoformat() + "Z", "namespace": ns,
                           "run_id": run, "agent_id": "locomo", "data": {}})
            for i, turn in enumerate(turns):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                ts = start + timedelta(seconds=30 * (i + 1))
                events.append({"id": f"{run}-w{i}", "type": "memory.write", "ts": ts.isoformat() + "Z", "namespace": ns,
                               "run_id": run, "agent_id": "locomo", "actor": "import",
                               "data": {"entry_id": _entry_id(ns, turn["dia_id"]), "text": text, "class": "relationship"}})
                last = max(last, ts)
            end = start + timedelta(seconds=30 * (len(turns) + 1))
            events.append({"id": f"{run}-end", "type": "run.end", "ts": end.isoformat() + "Z", "namespace": ns,
                           "run_id": run, "agent_id": "locomo", "data": {"outcome": "unknown"}})
        for q in conv["qa"]:
            questions.append({"namespace": ns, "question": q["question"], "category": q["category"],
                              "gold": {_entry_id(ns, d) for d in q.get("evidence", [])}})
    return events, questions, last


FALSE_ABSTENTION_BUDGET = 0.05


def _abstention(tops: list[float], answerable: list[int], absent: list[int]) -> dict[str, float]:
    """Abstention on unanswerable questions at the threshold that abstains on at most the budget
    of answerable ones; AUC = chance an answerable question's top relevance beats an unanswerable's."""
    ok, bad = np.array([tops[i] for i in answerable]), np.array([tops[i] for i in absent])
    if len(ok) == 0 or len(bad) == 0:
        return {}
    threshold = float(np.quantile(ok, FALSE_ABSTENTION_BUDGET, method="lower"))
    auc = float(((ok[:, None] > bad[None, :]).sum() + 0.5 * (ok[:, None] == bad[None, :]).sum()) / (len(ok) * len(bad)))
    return {"abstention": round(float((bad < threshold).mean()), 4),
            "false_abstention": round(float((ok < threshold).mean()), 4),
            "abstention_threshold": round(threshold, 4), "abstention_auc": round(auc, 4)}


def run(paths: list[Path], seed: int = 13) -> EvalResult:
    conversations = [c for p in paths for c in _load(p)]
    events, questions, last = convert(conversations)
    as_of = datetime.combine((last + timedelta(days=1)).date(), datetime.min.time())
    with Workspace() as ws:
        ws.land(events, seed)
        path = ws.build(as_of)
        ranked = {"raw": [], "curated": []}
        tops = {"raw": [], "curated": []}
        for q in questions:
            for mode in ranked:
                hits = recall(q["question"], q["namespace"], path, k=K, mode=mode)
                ranked[mode].append([h.entry_id for h in hits])
                tops[mode].append(hits[0].relevance if hits else 0.0)
        answerable = [i for i, q in enumerate(questions) if q["category"] != ABSTAIN_CATEGORY]
        variants = {
            name: retrieval_metrics(
                [[h.entry_id for h in recall(questions[i]["question"], questions[i]["namespace"], path, k=K,
                                             settings=settings)] for i in answerable],
                [questions[i]["gold"] for i in answerable])
            for name, settings in VARIANTS.items()
        }
    result = EvalResult("locomo", len(questions), {}, {}, variants=variants)
    for mode in ranked:
        metrics = retrieval_metrics([ranked[mode][i] for i in answerable], [questions[i]["gold"] for i in answerable])
        absent = [i for i, q in enumerate(questions) if q["category"] == ABSTAIN_CATEGORY]
        metrics |= _abstention(tops[mode], answerable, absent)
        getattr(result, mode).update(metrics)
    for cat in sorted({q["category"] for q in questions}):
        idx = [i for i, q in enumerate(questions) if q["category"] == cat]
        result.by_category[str(cat)] = {
            "n": len(idx),
            **{mode: retrieval_metrics([ranked[mode][i] for i in idx], [questions[i]["gold"] for i in idx])
               for mode in ranked},
        }
    result.notes.append(f"{len(conversations)} conversations, {sum(e['type'] == 'memory.write' for e in events)} turns; "
                        f"retrieval metrics over categories 1-4 ({len(answerable)} questions); abstention on category 5 "
                        f"= share whose top relevance falls under the threshold that abstains on "
                        f"{FALSE_ABSTENTION_BUDGET:.0%} of answerable questions; AUC under 0.5 means unanswerable "
                        "questions match the conversation better than answerable ones, so a relevance threshold "
                        "cannot abstain on them (a reader has to)")
    return result
