"""What every dataset evaluation shares: a scratch store built by the real pipeline, metrics, results.

A converter turns a dataset into log events (landed in a seeded shuffled order so "last written
wins" earns nothing) plus gold that never enters the log. The same ``memcurator.night``
derivation the nightly job runs builds the store; raw and curated are measured on the same queries.
"""

from __future__ import annotations

import math
import random
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memcurator import store
from memcurator.config import CurationConfig
from memcurator.home import Home
from memcurator.night import ingest_and_derive


@dataclass
class EvalResult:
    dataset: str
    n: int
    raw: dict[str, float]
    curated: dict[str, float]
    by_category: dict[str, dict] = field(default_factory=dict)
    variants: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"dataset": self.dataset, "n": self.n, "raw": self.raw, "curated": self.curated,
                "by_category": self.by_category, "variants": self.variants, "notes": self.notes}


class Workspace:
    """A temporary memcurator home holding one dataset's log and its derived store."""

    def __init__(self, root: Path | None = None):
        self._tmp = None if root else tempfile.TemporaryDirectory(prefix="memcurator-eval-")
        self.home = Home.from_env(root or Path(self._tmp.name)).ensure()

    def land(self, events: list[dict], seed: int, name: str = "dataset.jsonl") -> Path:
        import orjson

        shuffled = list(events)
        random.Random(seed).shuffle(shuffled)
        path = self.home.landing / name
        path.write_bytes(b"\n".join(orjson.dumps(e) for e in shuffled) + b"\n")
        return path

    def build(self, as_of: datetime, cfg: CurationConfig = CurationConfig()) -> Path:
        with store.connect(self.home.store) as conn:
            report = ingest_and_derive(conn, self.home.landing, as_of, cfg)
            if report.quarantined_lines:
                reasons = conn.execute("select reason, count(*) from raw.quarantine group by 1").fetchall()
                raise ValueError(f"the converter produced {report.quarantined_lines} invalid events: {reasons}")
            conn.execute("CHECKPOINT")
        return self.home.store

    def close(self) -> None:
        if self._tmp:
            self._tmp.cleanup()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def approve_conflict_free(conn, ws: "Workspace", as_of: datetime, cfg: CurationConfig) -> int:
    """The evaluations' curator policy: approve every proposal whose members do not conflict,
    recorded as ordinary decisions an hour before the night, then derive the night again.
    Returns how many proposals were approved."""
    from datetime import timedelta

    from memcurator import decisions, ingest
    from memcurator.night import derive_night

    proposals = conn.execute("select namespace, cluster_id, canonical_entry_id from core.principle_proposals "
                             "where status = 'proposed' and open_conflicts = 0").fetchall()
    for ns, cluster, canonical in proposals:
        decisions.record(ws.home.decisions, ns, "cluster", cluster, "approve",
                         "evaluation policy: approve every conflict-free proposal", "eval",
                         {"canonical_entry_id": canonical}, now=as_of - timedelta(hours=1))
    ingest.ingest_decisions(conn, ws.home.decisions, cfg)
    derive_night(conn, as_of.replace(tzinfo=None), cfg)
    return len(proposals)


def retrieval_metrics(ranked: list[list[str]], gold: list[set[str]], ks=(1, 5, 10)) -> dict[str, float]:
    """recall@k (share of gold found in the top k), MRR (first gold), nDCG@5 (binary gains)."""
    n = len(ranked)
    if n == 0:
        return {}
    out = {f"recall@{k}": 0.0 for k in ks} | {"mrr": 0.0, "ndcg@5": 0.0}
    for got, want in zip(ranked, gold):
        if not want:
            continue
        for k in ks:
            out[f"recall@{k}"] += len(set(got[:k]) & want) / len(want)
        first = next((i for i, e in enumerate(got, start=1) if e in want), None)
        out["mrr"] += 1.0 / first if first else 0.0
        dcg = sum(1.0 / math.log2(i + 1) for i, e in enumerate(got[:5], start=1) if e in want)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(want), 5) + 1))
        out["ndcg@5"] += dcg / ideal
    return {k: round(v / n, 4) for k, v in out.items()}
