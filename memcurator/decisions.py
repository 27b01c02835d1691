"""Curator decisions: appended to the decisions folder (their own input), applied from the night of the day
they are made (a night reads what was decided before its day's end)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import orjson

CLUSTER_ACTIONS = ("approve", "reject", "unmerge")
CONFLICT_ACTIONS = ("replace", "narrow", "retire", "dismiss")
LINK_ACTIONS = ("confirm",)


def record(folder: Path, namespace: str, target_kind: str, target_id: str, action: str, reason: str,
           curator: str, data: dict | None = None, now: datetime | None = None) -> dict:
    """Write one decision as its own file under decisions/<UTC day>/ (atomically: temp file, rename)."""
    if target_kind == "cluster" and action not in CLUSTER_ACTIONS:
        raise ValueError(f"cluster action must be one of {CLUSTER_ACTIONS}")
    if target_kind == "conflict" and action not in CONFLICT_ACTIONS:
        raise ValueError(f"conflict action must be one of {CONFLICT_ACTIONS}")
    if target_kind == "link" and (action not in LINK_ACTIONS or not (data or {}).get("supersedes")):
        raise ValueError("a link decision is confirm, with data.supersedes naming the replaced entry")
    if not reason.strip():
        raise ValueError("a decision needs a reason")
    now = now or datetime.now(timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    decision_id = "d_" + hashlib.sha256(f"{namespace}|{target_id}|{action}|{stamp}".encode()).hexdigest()[:16]
    line = {"id": decision_id, "ts": stamp, "namespace": namespace, "target_kind": target_kind, "target_id": target_id,
            "action": action, "reason": reason, "curator": curator, "data": data or {}}
    # one file per decision: landed files are immutable, so a decision is never appended to a file
    # that an earlier run already ingested; names sort in decision order
    day = folder / now.strftime("%Y-%m-%d")
    day.mkdir(parents=True, exist_ok=True)
    target = day / f"{now.strftime('%H%M%S%f')}-{decision_id}.jsonl"
    tmp = target.with_name("." + target.name + ".tmp")
    tmp.write_bytes(orjson.dumps(line) + b"\n")
    tmp.replace(target)
    return line
