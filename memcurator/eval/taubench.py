"""tau-bench: repeated runs of the same task are run-level near-duplicates; does compression see them?

Conversion: the ``tau-bench`` importer (memcurator/importers/transcripts.py), unchanged: each run
becomes run.start/run.end and one episodic entry, its digest. The importer never logs the task
id, the expected actions or the simulated user's instruction; the map from run to task id is kept
in memory as gold. Events land in a seeded shuffled order.

Metrics, against the task ids:
- ``pair_precision`` / ``pair_recall``: of the run pairs the pipeline puts in one cluster, how many
  share a task; of the run pairs that share a task, how many it puts in one cluster;
- ``cluster_purity``: share of clustered runs that belong to their cluster's majority task;
- ``duplicate_rate`` (gold): share of the runs the store shows that repeat a task already shown,
  raw (every run's entry) vs curated (the recall view plus the case shelf, after a curator
  approves every conflict-free proposal, the policy the synthetic evaluation uses too). Episodes
  are cases (readable, not recalled), so the curated active set holds none of them
  (``active_runs``): the duplicate rate is measured where they are read;
- ``detected_duplicate_rate``: the pipeline's own estimate over the same sets, by its clusters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from itertools import combinations
from pathlib import Path

import orjson

from memcurator import store
from memcurator.config import CurationConfig
from memcurator.eval.core import EvalResult, Workspace, approve_conflict_free
from memcurator.importers import stable_id, transcripts

NAMESPACE = "tau-bench"
START = datetime(2024, 5, 15, tzinfo=timezone.utc)


def _gold(path: Path, events: list) -> dict[str, str]:
    """entry id -> task id, from the same file, never through the log."""
    # the importer emits one run.start per run with a trajectory, in file order
    runs = [r for r in orjson.loads(transcripts.read_source(path)) if isinstance(r, dict) and isinstance(r.get("traj"), list)]
    starts = [e for e in events if isinstance(e, dict) and e["type"] == "run.start"]
    assert len(starts) == len(runs), "one run.start per run"
    return {stable_id(NAMESPACE, "episode", e["run_id"]): str(r["task_id"]) for e, r in zip(starts, runs)}


def _pairs(members: dict[str, list[str]]) -> set[tuple[str, str]]:
    return {tuple(sorted(p)) for group in members.values() for p in combinations(group, 2)}


def _cluster_metrics(conn, gold: dict[str, str]) -> dict:
    clusters = defaultdict(list)
    for cluster, entry in conn.execute("select cluster_id, entry_id from core.near_duplicate_clusters "
                                       "where namespace = ?", [NAMESPACE]).fetchall():
        if entry in gold:
            clusters[cluster].append(entry)
    by_task = defaultdict(list)
    for entry, task in gold.items():
        by_task[task].append(entry)
    found, true = _pairs(clusters), _pairs(by_task)
    clustered = sum(len(m) for m in clusters.values())
    majority = sum(Counter(gold[e] for e in m).most_common(1)[0][1] for m in clusters.values())
    return {"pair_precision": round(len(found & true) / len(found), 4) if found else 0.0,
            "pair_recall": round(len(found & true) / len(true), 4) if true else 0.0,
            "cluster_purity": round(majority / clustered, 4) if clustered else 0.0,
            "clusters": len(clusters), "clustered_runs": clustered}


def _gold_duplicate_rate(entries: list[str], gold: dict[str, str]) -> float:
    tasks = [gold[e] for e in entries if e in gold]
    return round((len(tasks) - len(set(tasks))) / len(tasks), 4) if tasks else 0.0


def run(paths: list[Path], seed: int = 13) -> EvalResult:
    if len(paths) != 1:
        raise ValueError("tau-bench takes one results file (JSON list of runs, plain or gzipped)")
    cfg = CurationConfig()
    events = transcripts.tau_bench(paths[0], NAMESPACE, START)
    gold = _gold(paths[0], events)
    as_of = START + timedelta(days=1)
    with Workspace() as ws:
        ws.land([e for e in events if isinstance(e, dict)], seed)
        ws.build(as_of.replace(tzinfo=None), cfg)
        with store.connect(ws.home.store) as conn:
            every = [e for (e,) in conn.execute("select entry_id from core.entries where namespace = ?", [NAMESPACE]).fetchall()]
            clusters = _cluster_metrics(conn, gold)
            detected_raw = conn.execute(
                """select (count(*) - count(distinct coalesce(c.cluster_id, e.entry_id))) / count(*)
                   from core.entries e left join core.near_duplicate_clusters c using (namespace, entry_id)""").fetchone()[0]
            approved = approve_conflict_free(conn, ws, as_of, cfg)
            # what the curated store still shows: the recall view (an approved principle stands for
            # its cluster as its canonical run) and the case shelf where episodes are read
            readable = [e for (e,) in conn.execute(
                """select coalesce(p.canonical_entry_id, r.entry_id) from mart.recall_view r
                   left join core.principle_proposals p on p.namespace = r.namespace and p.principle_id = r.entry_id
                   where r.namespace = $ns
                   union
                   select entry_id from core.entry_lifecycle where namespace = $ns and state = 'case'""",
                {"ns": NAMESPACE}).fetchall()]
            active = conn.execute("select count(*) from mart.recall_view where tier = 'active' and namespace = ?",
                                  [NAMESPACE]).fetchone()[0]
            cluster_of = dict(conn.execute("select entry_id, cluster_id from core.near_duplicate_clusters "
                                           "where namespace = ?", [NAMESPACE]).fetchall())
            shown = [cluster_of.get(e, e) for e in readable]
            detected_curated = (len(shown) - len(set(shown))) / len(shown) if shown else 0.0
    raw = {"duplicate_rate": _gold_duplicate_rate(every, gold), "detected_duplicate_rate": round(detected_raw, 4),
           "readable_runs": len(every), "active_runs": len(every)}
    curated = {"duplicate_rate": _gold_duplicate_rate(readable, gold),
               "detected_duplicate_rate": round(detected_curated, 4), "readable_runs": len(readable),
               "active_runs": active} | clusters
    result = EvalResult("tau-bench", len(gold), raw, curated)
    result.notes.append(f"{len(gold)} runs of {len(set(gold.values()))} tasks; curated = after approving the "
                        f"{approved} conflict-free proposals; cluster metrics are against the task ids. "
                        "Runs of one task are not restatements of each other: the simulated user words the "
                        "request anew and the agent takes other actions (word Jaccard of same-task digests: "
                        "median about 0.4), so at the paraphrase threshold few of them cluster")
    return result
