"""The demo fleet's ground truth: redundancy in the active set, stale entries retired, contested
entries recalled without their conflict, pair precision/recall, and what an agent recalls about each
restated lesson, raw vs curated.

Raw treats every entry as active (no curation). Curated is measured twice: with no curator
decisions (propose-only compression), and after a curator approves every proposal whose members
do not conflict (the curator policy of this evaluation, recorded as ordinary decisions).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from itertools import combinations

import orjson

from memcurator import demo, health, ingest, store
from memcurator.config import CurationConfig
from memcurator.eval.core import EvalResult, Workspace, approve_conflict_free
from memcurator.night import derive_night
from memcurator.recall import RecallSettings, recall

K = 5  # the recall measure's top k

END = date(2026, 11, 29)


def _measure(conn, truth: dict) -> dict:
    rate, _ = health.active_set_near_duplicate_rate(conn)
    stale = {(ns, e) for ns, e in truth["stale"]}
    active = {(ns, e) for ns, e in conn.execute("select namespace, entry_id from mart.recall_view where tier = 'active'").fetchall()}
    recallable = {(ns, e) for ns, e in conn.execute("select namespace, entry_id from mart.recall_view").fetchall()}
    contested_bare = conn.execute(
        """select count(*) from core.contested_entries c join mart.recall_view r using (namespace, entry_id)
           where not list_contains(list_transform(r.banners, b -> b like 'CONFLICT%'), true)""").fetchone()[0]
    return {
        "active_near_duplicate_rate": round(rate, 4),
        "stale_retired": round(len(stale - recallable) / len(stale), 4) if stale else 1.0,
        "stale_in_active_set": round(len(stale & active) / len(stale), 4) if stale else 0.0,
        "contested_recalled_without_conflict": int(contested_bare),
        "active_entries": len(active),
    }


def _raw(conn, truth: dict) -> dict:
    total, redundant = conn.execute(
        """select count(*), count(*) - count(distinct coalesce(c.cluster_id, e.namespace || e.entry_id))
           from core.entries e left join core.near_duplicate_clusters c using (namespace, entry_id)""").fetchone()
    stale = {(ns, e) for ns, e in truth["stale"]}
    return {"active_near_duplicate_rate": round(redundant / total, 4), "stale_retired": 0.0,
            "stale_in_active_set": 1.0 if stale else 0.0, "contested_recalled_without_conflict": None,
            "active_entries": total}


def _pairs(conn, truth: dict) -> dict:
    found = {(ns, a, b) for ns, a, b in conn.execute(
        "select namespace, least(entry_a, entry_b), greatest(entry_a, entry_b) from core.near_duplicate_pairs").fetchall()}
    lessons = {(ns, e) for ns, e in conn.execute("select namespace, entry_id from core.entries where class = 'lesson'").fetchall()}
    true_pairs = {(g["namespace"], *sorted(p)) for g in truth["duplicate_groups"].values() for p in combinations(g["entries"], 2)}
    found = {p for p in found if (p[0], p[1]) in lessons and (p[0], p[2]) in lessons}
    hit = len(found & true_pairs)
    return {"lesson_pair_precision": round(hit / len(found), 4) if found else 0.0,
            "lesson_pair_recall": round(hit / len(true_pairs), 4) if true_pairs else 0.0}


def _recalled(path, truth: dict, mode: str, settings: RecallSettings = RecallSettings()) -> dict:
    """Each restated lesson of the truth asked with its first writing's text: the share of the top-K
    places that restate a hit above them (the same lesson again: a place lost to another entry), and
    the share of lessons found in the top K (a member, or an approved principle merging one)."""
    with store.connect(path, read_only=True) as conn:
        texts = dict(conn.execute("select namespace || '/' || entry_id, text from core.entries").fetchall())
        merged = {f"{ns}/{p}": set(members) for ns, p, members in conn.execute(
            "select namespace, principle_id, members from core.principle_proposals where status = 'approved'").fetchall()}
    restated = found = places = 0
    for group in truth["duplicate_groups"].values():
        ns, members = group["namespace"], set(group["entries"])
        query = next(texts[f"{ns}/{e}"] for e in group["entries"] if f"{ns}/{e}" in texts)
        hits = recall(query, ns, path, k=K, mode=mode, settings=settings)
        lesson = [h.entry_id in members or bool(merged.get(f"{ns}/{h.entry_id}", set()) & members) for h in hits]
        found += any(lesson)
        restated += sum(lesson) - any(lesson)
        places += len(hits)
    groups = len(truth["duplicate_groups"])
    return {f"top{K}_restated_share": round(restated / places, 4) if places else 0.0,
            f"top{K}_lesson_found": round(found / groups, 4) if groups else 1.0}


def run(paths=None, writes: int = 20_000, namespaces: int = 6, days: int = 90, seed: int = 21) -> EvalResult:
    cfg = CurationConfig()
    as_of = datetime.combine(END + timedelta(days=1), datetime.min.time())
    with Workspace() as ws:
        truth_obj = demo.generate(ws.home.landing, ws.home.truth, writes=writes, namespaces=namespaces, days=days,
                                  seed=seed, end=END)
        truth = orjson.loads((ws.home.truth / "demo_truth.json").read_bytes())
        with store.connect(ws.home.store) as conn:
            ingest.ingest_landing(conn, ws.home.landing, None, cfg)
            derive_night(conn, as_of, cfg)
            raw = _raw(conn, truth)
            propose_only = _measure(conn, truth) | _pairs(conn, truth)
        # recall opens the store read-only: measured between the writing connections
        raw |= _recalled(ws.home.store, truth, "raw")
        propose_only |= _recalled(ws.home.store, truth, "curated")
        unfolded = _recalled(ws.home.store, truth, "curated", RecallSettings(fold_restatements=False))
        with store.connect(ws.home.store) as conn:
            approved_count = approve_conflict_free(conn, ws, as_of, cfg)
            approved = _measure(conn, truth)
        approved |= _recalled(ws.home.store, truth, "curated")
    result = EvalResult("synthetic", truth_obj.writes, raw, approved)
    result.by_category["curated, no curator decisions"] = {"n": truth_obj.writes, "raw": raw, "curated": propose_only}
    result.variants = {"no curator decisions": {m: v for m, v in propose_only.items() if m.startswith(f"top{K}_")},
                       "no curator decisions, fold_restatements off": unfolded}
    result.notes.append(f"demo fleet: {writes} writes, {namespaces} namespaces, {days} days, seed {seed}, ending {END}; "
                        f"curated = after approving the {approved_count} conflict-free proposals "
                        "(the by-category row shows curated with no decisions)")
    result.notes.append(f"top{K}_restated_share: each of the {len(truth['duplicate_groups'])} restated lessons asked "
                        f"with its first writing's text, the share of the top {K} places taken by the same lesson "
                        f"again; top{K}_lesson_found: the share of lessons in the top {K} (an approved principle "
                        "merging a writing counts); the variants are curated recall before any decision, with and without "
                        "folding a hit's unmerged near-duplicates into it (recall.RecallSettings.fold_restatements)")
    return result
