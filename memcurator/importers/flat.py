"""A generic flat export (JSONL or CSV; e.g. what mem0-style stores export).

Columns (JSONL keys or CSV header): ``text`` (or ``memory``), optional ``id``, ``created_at``,
``last_accessed_at`` (or ``updated_at``), ``user_id``, ``class``, ``importance``, ``tags`` (JSON list or
comma-separated). Each row becomes a ``memory.write`` at ``created_at`` (default: ``ts``), class
``lesson`` unless given; a ``last_accessed_at`` becomes a ``memory.recall`` of that entry at that
time, so decay sees real use. A time without a zone is UTC. Rows without text are passed on for
ingest to quarantine, and an ``importance`` that is no number or ``tags`` that are no list of text go
into the write as they came, so ingest quarantines it and names the field.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

import orjson

from memcurator.importers import iso, slug, stable_id


def _rows(path: Path) -> list:
    raw = path.read_bytes()
    if path.suffix.lower() == ".csv":
        return list(csv.DictReader(io.StringIO(raw.decode("utf-8", errors="replace"))))
    rows = []
    for line in raw.splitlines():
        if line.strip():
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                rows.append(line)
    return rows


def _time(value, default: datetime) -> str:
    if not value:
        return iso(default)
    try:
        return iso(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # (a time whose UTC falls outside years 1-9999 overflows)
        return str(value)  # ingest quarantines it as invalid_timestamp


def _importance(value):
    """A number, or a number written as text; anything else as it came (ingest quarantines it)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _tags(value):
    """A list of tags: a JSON list or comma-separated text; anything else, or a list holding other than
    text and numbers, as it came (ingest quarantines it: tags must be strings)."""
    if isinstance(value, str):
        if not value.startswith("["):
            return [t.strip() for t in value.split(",") if t.strip()]
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    if isinstance(value, list) and all(isinstance(t, (str, int, float)) and not isinstance(t, bool) for t in value):
        return [str(t) for t in value]
    return value


def convert(path: Path, namespace: str, ts: datetime) -> list:
    events: list = []
    for n, row in enumerate(_rows(path), start=1):
        text = row.get("text") or row.get("memory") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            # (a CSV row longer than its header keeps the rest under the key None)
            events.append(row if isinstance(row, bytes) else orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS))
            continue
        entry = slug(str(row["id"])) if row.get("id") else stable_id(namespace, "flat", text)
        data = {"entry_id": entry, "text": text, "class": row.get("class") or "lesson", "tags": _tags(row.get("tags") or [])}
        if row.get("importance") not in (None, ""):
            data["importance"] = _importance(row["importance"])
        envelope = {"namespace": namespace, "actor": "import"}
        if row.get("user_id"):
            envelope["user_id"] = slug(str(row["user_id"]))
        events.append({"id": stable_id(namespace, "flatw", entry, text, str(n)), "type": "memory.write",
                       "ts": _time(row.get("created_at"), ts), **envelope, "data": data})
        accessed = row.get("last_accessed_at") or row.get("updated_at")
        if accessed:
            events.append({"id": stable_id(namespace, "flatr", entry, str(accessed)), "type": "memory.recall",
                           "ts": _time(accessed, ts), **envelope,
                           "data": {"query": "(imported access)", "results": [{"entry_id": entry, "rank": 1}]}})
    return events
