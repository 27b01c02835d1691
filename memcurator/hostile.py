"""A seeded corpus of hostile lines mixed with good events, with the expected reason of each bad line.

Used by the reliability tests: every bad line must land in quarantine with its reason, and every
good event must land in raw.events.
"""

from __future__ import annotations

import random

import orjson

GOOD_TS = "2026-11-02T10:00:00Z"


def _event(i: int, **over) -> dict:
    event = {"id": f"good-{i}", "type": "memory.write", "ts": GOOD_TS, "namespace": "ns-good",
             "data": {"text": f"lesson number {i}: keep changes small", "class": "lesson"}}
    event.update(over)
    return event


def corpus(bad: int = 10_000, good: int = 2_000, seed: int = 1, huge_lines: int = 2) -> tuple[list[bytes], int, dict[int, str]]:
    """Lines (shuffled), the number of good events, and {line_no: expected reason} for bad lines."""
    rng = random.Random(seed)
    makers = [
        ("invalid_json", lambda i: orjson.dumps(_event(i))[: rng.randint(5, 40)]),
        ("wrong_type", lambda i: orjson.dumps(_event(i, id=f"b{i}", data={"text": 42, "class": "lesson"}))),
        ("invalid_utf8", lambda i: b'{"id": "b' + str(i).encode() + b'", "text": "\xff\xfe\xc3\x28"}'),
        ("nul_byte", lambda i: orjson.dumps(_event(i, id=f"b{i}"))[:-2] + b"\x00}}"),
        ("too_deeply_nested", lambda i: b"[" * 200 + b"]" * 200),
        ("unknown_type", lambda i: orjson.dumps(_event(i, id=f"b{i}", type="memory.teleport"))),
        ("timestamp_out_of_range", lambda i: orjson.dumps(_event(i, id=f"b{i}", ts="9999-12-31T00:00:00Z"))),
        ("timestamp_out_of_range", lambda i: orjson.dumps(_event(i, id=f"b{i}", ts="1900-01-01T00:00:00Z"))),
        ("supersede_without_reason", lambda i: orjson.dumps(_event(i, id=f"b{i}", data={
            "text": "x", "class": "lesson", "supersedes": "good-1"}))),
        ("supersede_cycle", lambda i: orjson.dumps(_event(i, id=f"b{i}", data={
            "text": "x", "class": "lesson", "entry_id": f"c{i}", "supersedes": f"c{i}", "reason": "r"}))),
        ("invalid_id", lambda i: orjson.dumps(_event(i, id=f"b{i}", namespace="x'; drop table raw.events; --"))),
        ("invalid_id", lambda i: orjson.dumps(_event(i, id=f"b{i}", namespace="../../etc/passwd"))),
        ("invalid_id", lambda i: orjson.dumps(_event(i, id=f"b{i}", data={"text": "x", "class": "lesson", "entry_id": "a/b"}))),
        ("not_an_object", lambda i: b"[1, 2, 3]"),
        ("missing_field", lambda i: orjson.dumps({"id": f"b{i}", "type": "run.start", "ts": GOOD_TS, "namespace": "n"})),
    ]
    lines: list[tuple[bytes, str | None]] = [(orjson.dumps(_event(i)), None) for i in range(good)]
    for i in range(bad):
        reason, make = makers[i % len(makers)]
        lines.append((make(i), reason))
    for i in range(huge_lines):
        lines.append((b'{"id": "huge-' + str(i).encode() + b'", "pad": "' + b"x" * 10_500_000 + b'"}', "line_too_long"))
    rng.shuffle(lines)
    # a conflicting duplicate arrives after the event it contradicts (the first landed wins)
    for i in range(bad // len(makers)):
        lines.append((orjson.dumps(_event(rng.randrange(good), data={"text": f"changed {i}", "class": "lesson"})),
                      "duplicate_id_conflict"))
    expected = {n: reason for n, (_, reason) in enumerate(lines, start=1) if reason}
    return [line for line, _ in lines], good, expected
