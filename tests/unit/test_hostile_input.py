"""Hostile input: 10k+ bad lines mixed with good events; property tests of the validator."""

from __future__ import annotations

import json
import resource

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memcurator import ingest, store
from memcurator.config import CurationConfig
from memcurator.hostile import corpus
from tests.conftest import write_jsonl


def test_every_bad_line_is_quarantined_with_its_reason_and_no_good_event_is_lost(home, conn):
    lines, good, expected = corpus(bad=10_000, good=2_000)
    write_jsonl(home.landing / "hostile.jsonl", lines)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = ingest.ingest_landing(conn, home.landing, home.lake, CurationConfig(max_line_bytes=10_000_000))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert report.valid_events == good
    assert conn.execute("select count(*) from raw.events where event_id like 'good-%'").fetchone()[0] == good
    got = dict(conn.execute("select line_no, reason from raw.quarantine").fetchall())
    assert got == expected  # every bad line, each with its precise reason
    assert len(expected) >= 10_000
    assert grown_mb < 1_500  # two 10 MB lines do not blow memory up (bounded by file size, not line count)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
event_like = st.fixed_dictionaries(
    {}, optional={"id": st.one_of(st.text(max_size=12), st.integers()), "type": st.sampled_from(
        ["memory.write", "memory.recall", "memory.check", "run.start", "run.end", "x"]),
        "ts": st.sampled_from(["2026-11-02T10:00:00Z", "nope", "1800-01-01T00:00:00Z"]),
        "namespace": st.text(max_size=12), "data": json_values})


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(event_like, st.binary(max_size=60)), min_size=1, max_size=25), st.integers(1, 4))
@example(items=[b"\x1f\x8b", {}], files=1)  # a plain file starting with gzip's two bytes (read whole as gzip once)
def test_any_input_is_either_an_event_or_quarantined_never_a_crash(tmp_path_factory, items, files):
    from memcurator.home import Home

    home = Home.from_env(tmp_path_factory.mktemp("h")).ensure()
    # the stdlib writes any JSON a writer might (integers beyond 64 bits included)
    lines = [json.dumps(x).encode() if isinstance(x, dict) else x.replace(b"\n", b" ") for x in items]
    # the lines landed in one file or split over several, judged together in one batch
    parts = [lines[k::files] for k in range(files)]
    for k, part in enumerate(parts):
        write_jsonl(home.landing / f"f{k}.jsonl", part)
    with store.connect(home.store) as conn:
        report = ingest.ingest_landing(conn, home.landing, home.lake, CurationConfig())
        # every line accounted for, file by file
        assert [f.valid_events + f.duplicate_events + f.quarantined_lines for f in report.files] == [
            sum(1 for x in part if x.strip()) for part in parts]
        assert conn.execute("select sum(lines - valid_events - duplicate_events - quarantined_lines) "
                            "from raw.landed_files").fetchone()[0] == 0
        reasons = [r[0] for r in conn.execute("select reason from raw.quarantine").fetchall()]
        assert all(reasons)
        # the lake holds the stored events, as stored
        lake_files = [str(f) for f in home.lake.rglob("*.parquet")]
        lake = conn.execute("select * from read_parquet($f, hive_partitioning = false) order by all",
                            {"f": lake_files}).fetchall() if lake_files else []
        assert lake == conn.execute("select * from raw.events order by all").fetchall()
