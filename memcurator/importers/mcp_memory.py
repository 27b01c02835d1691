"""MCP memory server ``memory.jsonl`` (entities with observations, and relations).

Maps to ``memory.write`` events of class ``relationship`` (facts about named things):
- each observation of an entity: "<name> (<entityType>): <observation>", tagged with the entity;
- each relation: "<from> <relationType> <to>", tagged with both entities.
The format has no times: every event takes ``ts`` (default: the file's modification time).
Dropped: exact repeats (the same entity observation twice is one entry with two versions), and an
entity without observations (it holds no fact to write; a relation still names it). Lines that are
not entity/relation records are passed on for ingest to quarantine, and so is an observation that
is no text or is blank (a write with it as its text).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson

from memcurator.importers import iso, slug, stable_id


def convert(path: Path, namespace: str, ts: datetime) -> list:
    events: list = []
    for line_no, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            events.append(raw)
            continue
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "entity" and isinstance(record.get("name"), str) and isinstance(record.get("observations"), list):
            name, etype = record["name"], record.get("entityType") or "entity"
            for obs in record["observations"]:
                readable = isinstance(obs, str) and bool(obs.strip())
                # an observation that is no text, or blank, keeps its value as the write's text: ingest
                # quarantines the write (wrong_type, empty_text) instead of its being left out unseen
                said = orjson.dumps(obs).decode() if not isinstance(obs, str) else obs
                events.append({"id": stable_id(namespace, "ev", name, said, str(line_no)), "type": "memory.write",
                               "ts": iso(ts), "namespace": namespace, "actor": "import",
                               "data": {"entry_id": stable_id(namespace, "obs", name, said),
                                        "text": f"{name} ({etype}): {obs}" if readable else obs,
                                        "class": "relationship", "tags": [slug(name)]}})
        elif kind == "relation" and all(isinstance(record.get(k), str) for k in ("from", "to", "relationType")):
            text = f"{record['from']} {record['relationType']} {record['to']}"
            events.append({"id": stable_id(namespace, "rel", text, str(line_no)), "type": "memory.write", "ts": iso(ts),
                           "namespace": namespace, "actor": "import",
                           "data": {"entry_id": stable_id(namespace, "rel", text), "text": text, "class": "relationship",
                                    "tags": sorted({slug(record["from"]), slug(record["to"])})}})
        else:
            events.append(raw)  # not an entity or relation: ingest quarantines it with the reason
    return events
