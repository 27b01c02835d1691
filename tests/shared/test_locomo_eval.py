"""LoCoMo on the real file: the converter leaks no gold and the evaluation is reproducible."""

from __future__ import annotations

import orjson
import pytest

from memcurator.eval import locomo
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def conversations():
    return locomo._load(shared_data("locomo", "locomo_dev.json.gz"))


def test_converter_puts_no_gold_in_the_log(conversations):
    events, questions, _ = locomo.convert(conversations)
    log = b"\n".join(orjson.dumps(e) for e in events).lower()
    for conv in conversations:
        for qa in conv["qa"]:
            assert qa["question"].lower().encode() not in log
            for dia in qa.get("evidence", []):
                assert f'"{dia.lower()}"'.encode() not in log  # dialog ids are mapped to opaque entry ids
    assert b"category" not in log and b"evidence" not in log
    assert len(questions) == sum(len(c["qa"]) for c in conversations)


def test_every_turn_is_one_write_in_its_conversation_namespace(conversations):
    events, _, _ = locomo.convert(conversations)
    writes = [e for e in events if e["type"] == "memory.write"]
    turns = sum(len(v) for c in conversations for k, v in c["conversation"].items() if isinstance(v, list))
    assert len(writes) == turns
    assert {e["namespace"] for e in writes} == {"locomo-" + c["sample_id"] for c in conversations}


def test_evaluation_is_reproducible_and_curation_does_not_lose_evidence():
    path = shared_data("locomo", "locomo_dev.json.gz")
    first, second = locomo.run([path]), locomo.run([path])
    assert first.as_dict() == second.as_dict()
    assert first.curated["recall@5"] >= first.raw["recall@5"]
