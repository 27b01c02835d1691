"""The JSON Schema (for writers) and the SQL validator (for ingest) accept and reject alike."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from memcurator import ingest
from memcurator.config import CurationConfig
from tests.conftest import ev, write, write_jsonl

SCHEMA = json.loads(resources.files("memcurator").joinpath("schemas/event.schema.json").read_text())

CASES = [
    write("a lesson", entry_id="e1", data={"importance": 0.4, "trust": 0.9, "generality": 2, "tags": ["svc"]}),
    write("new", entry_id="e2", data={"supersedes": "e1", "reason": "changed"}),
    write("new", entry_id="e3", data={"supersedes": "e1"}),
    write("x", cls="gossip"),
    ev("memory.recall", {"query": "q", "results": [{"entry_id": "e1", "rank": 1, "injected": True}]}),
    ev("memory.recall", {"query": "q", "results": [{"entry_id": "e1", "rank": "1"}]}),
    ev("memory.check", {"entry_id": "e1", "status": "fail", "error_class": "assertion", "corrected_by": "e2"}),
    ev("memory.check", {"entry_id": "e1", "status": "fail"}),
    ev("run.end", {"outcome": "success"}),
    ev("run.end", {}),
    ev("run.start", {}, namespace="bad/ns"),
    ev("memory.forget", {}),
]


@pytest.mark.parametrize("event", CASES, ids=lambda e: f"{e['type']}-{e['id']}")
def test_schema_and_validator_agree(conn, home, event):
    schema_ok = jsonschema.Draft202012Validator(SCHEMA).is_valid(event)
    write_jsonl(home.landing / "f.jsonl", [event])
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events == 1) == schema_ok
