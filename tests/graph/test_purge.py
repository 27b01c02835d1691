"""Purge: after `memcurator purge`, no byte of the purged content is left in any file under the home.

The home is built by the real nightly job on a persistent Dagster instance (so Dagster's run
history is under the home too), with the target's content in plain and gzipped landing files,
in quarantine, in a curator decision, in the lake, the store and the published snapshot. Before
the purge the same scan finds every marker (the scan can fail); afterwards it finds none of the
target's and all of the neighbour's.
"""

from __future__ import annotations

import gzip
import shutil
from datetime import datetime, timezone

import duckdb
import orjson
import pytest

from memcurator import decisions, ingest, store
from memcurator.home import HOME_ENV, Home
from memcurator.purge import LEDGER, purge
from memcurator.runner import run_nightly
from tests.conftest import ev, held_by_another_process, store_is_held, write, write_jsonl

GONE = "tenant-gone"
STAYS = "tenant-stays"
# long, distinct markers: one per place the content can reach
MARKERS = {
    "write": "zebracorn-ledger-9f3e1c retries need jittered backoff after the quartz outage",
    "restated": "zebracorn-ledger-9f3e1c retries need a jittered backoff after quartz outages",
    "gz": "xylophant-vault-41be77 keys rotate every fortnight on the vault cluster",
    "bad": "quokkamancer-7d0a22 this line is truncated",
    "query": "wombatrix-query-a5c9e0 how do retries work",
    "decision": "narwhalist-reason-88e1f2 same lesson twice",
}
NEIGHBOUR = "pangolinade-keep-3c1d5e the stays tenant keeps this lesson"
USER_TEXT = "ocelotry-user-b7e4a9 bob prefers invoices by post"


def _files(root):
    return [p for p in sorted(root.rglob("*")) if p.is_file()]


def _readable_bytes(path) -> bytes:
    """The file's bytes, plus what a reader recovers from it: gunzipped text, and every cell of a
    DuckDB or Parquet file as text (their pages may be compressed, so raw bytes alone could hide it)."""
    raw = path.read_bytes()
    out = [raw]
    if raw[:2] == b"\x1f\x8b":
        out.append(gzip.decompress(raw))
    if path.suffix == ".parquet":
        with duckdb.connect() as conn:
            out.append(repr(conn.execute(f"select * from read_parquet('{path}')").fetchall()).encode())
    if path.suffix == ".duckdb":
        with store.connect(path, read_only=True) as conn:
            for (table,) in conn.execute("select '\"' || schema_name || '\".\"' || table_name || '\"' "
                                         "from duckdb_tables()").fetchall():
                out.append(repr(conn.execute(f"select * from {table}").fetchall()).encode())
    return b"\n".join(out)


def _found(home: Home, needles: list[str]) -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    for path in _files(home.root):
        if path.name.endswith(".wal") or path.suffix in (".lock",):
            data = path.read_bytes()
        else:
            data = _readable_bytes(path)
        for needle in needles:
            if needle.encode() in data:
                hits.setdefault(needle, []).append(str(path.relative_to(home.root)))
    return hits


@pytest.fixture(scope="module")
def _built_once(tmp_path_factory) -> Home:
    """The home after its first night, built once for the module (the job takes most of a test's time);
    each test purges a copy of it."""
    home = Home.from_env(tmp_path_factory.mktemp("purge") / "home").ensure()
    write_jsonl(home.landing / "2026-11-01" / "a.jsonl", [
        write(MARKERS["write"], entry_id="g1", namespace=GONE, ts="2026-11-01T10:00:00Z", run_id="r1"),
        write(MARKERS["restated"], entry_id="g2", namespace=GONE, ts="2026-11-01T11:00:00Z", run_id="r2"),
        ev("memory.recall", {"query": MARKERS["query"], "results": [{"entry_id": "g1", "rank": 1, "injected": True}]},
           namespace=GONE, ts="2026-11-01T12:00:00Z"),
        '{"id": "bad-1", "type": "memory.write", "namespace": "' + GONE + '", "data": {"text": "' + MARKERS["bad"],
        write(NEIGHBOUR, entry_id="s1", namespace=STAYS, ts="2026-11-01T10:00:00Z"),
        write(USER_TEXT, entry_id="u1", namespace=STAYS, ts="2026-11-01T10:30:00Z", user_id="bob"),
    ])
    write_jsonl(home.landing / "2026-11-01" / "b.jsonl.gz", [
        write(MARKERS["gz"], entry_id="g3", namespace=GONE, ts="2026-11-01T13:00:00Z"),
    ], gz=True)
    decisions.record(home.decisions, GONE, "cluster", "c_0000000000", "reject", MARKERS["decision"], "curator",
                     now=datetime(2026, 11, 1, 23, tzinfo=timezone.utc))
    with pytest.MonkeyPatch.context() as env:  # run_nightly sets both for the process: put back after
        env.setenv(HOME_ENV, str(home.root))
        env.setenv("DAGSTER_HOME", str(home.dagster_home))
        outcome = run_nightly(home, "2026-11-01")
    assert outcome.success
    return home


@pytest.fixture
def built(_built_once, tmp_path, monkeypatch) -> Home:
    home = Home.from_env(shutil.copytree(_built_once.root, tmp_path / "home", symlinks=True))
    monkeypatch.setenv(HOME_ENV, str(home.root))
    monkeypatch.setenv("DAGSTER_HOME", str(home.dagster_home))
    return home


def test_purge_namespace_leaves_no_byte_of_it_under_the_home(built):
    home = built
    # published again: where the store's file cannot be cloned, the snapshot replaced stays as the spare
    spare = store.spare_path(home.published).relative_to(home.root).as_posix()
    kept = store.publish(home.store, home.published).published_by != "clone"
    before = _found(home, [*MARKERS.values(), NEIGHBOUR])
    assert set(before) == {*MARKERS.values(), NEIGHBOUR}, "the scan must see every marker before the purge"
    assert (spare in before[MARKERS["write"]]) == kept
    assert any(p.startswith("store.duckdb") for p in before[MARKERS["write"]])
    assert any(p.startswith("lake/") for p in before[MARKERS["write"]])
    assert any(p.startswith("published/") for p in before[MARKERS["write"]])

    receipt = purge(home, "namespace", GONE, "customer left: contract ended")
    after = _found(home, [*MARKERS.values(), NEIGHBOUR, GONE])
    assert set(after) == {NEIGHBOUR}, after
    assert receipt.landing_lines == 5 and receipt.store_events == 4 and receipt.decision_files_deleted == 1
    assert receipt.store_quarantine_rows == 1 and receipt.lake_rows == 4 and len(receipt.line_sha256) == 6

    ledger = [orjson.loads(line) for line in (home.root / LEDGER).read_bytes().splitlines()]
    assert ledger[-1]["purge_id"] == receipt.purge_id and ledger[-1]["reason"] == "customer left: contract ended"
    # the neighbour is whole, and the next night neither re-ingests nor complains
    with store.connect(home.published, read_only=True) as conn:
        assert conn.execute("select namespace, entry_id from mart.recall_view order by all").fetchall() == \
            [(STAYS, "s1"), (STAYS, "u1")]
    night = run_nightly(home, "2026-11-02")
    assert night.success
    checks = {name: passed for _, name, passed in night.checks}
    assert checks["every_landed_line_is_accounted_for"] and checks["event_ids_are_unique"]
    assert checks["landed_files_unchanged_since_ingest"]  # the purge recorded the files it wrote again
    with store.connect(home.store, read_only=True) as conn:
        assert conn.execute("select count(*) from raw.events where namespace = ?", [GONE]).fetchone()[0] == 0
        assert conn.execute("select count(*) from raw.events").fetchone()[0] == 2


def test_purge_removes_what_killed_nights_and_checks_left_beside_the_store(built):
    # a killed profile-night or rederive-check leaves its folder (a copy of the store, or of its events), a
    # killed full night its spilled texts: the purge holds the write lock, so such folders are leftovers
    home = built
    for name in ("profile", "rederive", "passes"):
        folder = home.store.with_name(f"{home.store.name}.{name}-killed")
        folder.mkdir()
        shutil.copy2(home.store, folder / home.store.name)
    assert len(_found(home, [MARKERS["write"]])[MARKERS["write"]]) >= 4, "the scan must see the copies"
    purge(home, "namespace", GONE, "customer left: contract ended")
    assert set(_found(home, [*MARKERS.values(), NEIGHBOUR])) == {NEIGHBOUR}
    assert not [p for p in home.store.parent.iterdir() if p.name.startswith(f"{home.store.name}.") and p.is_dir()]


def test_purge_user_removes_only_that_users_events(built):
    home = built
    receipt = purge(home, "user_id", "bob", "right to erasure request 2026-11-30")
    after = _found(home, [USER_TEXT, NEIGHBOUR, MARKERS["write"]])
    assert USER_TEXT not in after and NEIGHBOUR in after and MARKERS["write"] in after
    assert receipt.store_events == 1 and receipt.landing_lines == 1


def test_purge_needs_a_reason_and_a_known_kind(built):
    with pytest.raises(ValueError):
        purge(built, "namespace", GONE, "  ")
    with pytest.raises(ValueError):
        purge(built, "agent_id", "x", "why")


def test_a_purge_waits_for_a_process_holding_the_store_and_then_completes(built):
    """A purge run while a night holds the store waits for it (saying so), where it failed on DuckDB's
    lock; one that may not wait fails clearly and removes nothing."""
    holder = held_by_another_process(built, 30.0)
    try:
        with pytest.raises(store.StoreBusy, match="held by another process"):
            purge(built, "user_id", "bob", "right to erasure request 2026-11-30", wait_seconds=0)
    finally:
        holder.kill()
        holder.wait()
    assert USER_TEXT in _found(built, [USER_TEXT])  # nothing removed
    said = []
    holder = held_by_another_process(built, 2.0)
    receipt = purge(built, "user_id", "bob", "right to erasure request 2026-11-30", log=said.append)
    assert holder.wait() == 0
    assert receipt.store_events == 1 and USER_TEXT not in _found(built, [USER_TEXT])
    assert said and "another process holds it" in said[0]


def test_a_purged_lake_part_keeps_its_name_and_the_landing_files_it_names(built):
    """A part the purge writes again keeps the names of the landing files its events came from (its
    metadata) and its own name, so the lake's parts merge and are told apart as before; its rows are the
    part's but the target's, in event_id order."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from memcurator import ingest

    def parts():
        return {p.relative_to(built.lake): (ingest.part_sources(p), pq.read_table(p))
                for p in sorted((built.lake / "events").rglob("*.parquet"))}

    before = parts()
    assert all(sources is not None for sources, _ in before.values())  # the job's lake: parts only
    receipt = purge(built, "user_id", "bob", "right to erasure request 2026-11-30")
    after = parts()
    assert receipt.lake_files_rewritten >= 1 and set(after) <= set(before)
    rewritten = 0
    for name, (sources, table) in after.items():
        old_sources, old = before[name]
        assert sources == old_sources, name
        expected = old.filter(pc.not_equal(old["user_id"].fill_null(""), "bob"))  # the rows but bob's
        assert table.select(old.column_names).equals(expected), name
        assert table["event_id"].to_pylist() == sorted(table["event_id"].to_pylist())
        rewritten += table.num_rows != old.num_rows
    assert rewritten >= 1


def test_a_purge_holds_the_store_while_it_replaces_it_and_publishes_it(built, monkeypatch):
    """The compacted file is renamed over the store, and the snapshot copied from it, while the purge holds
    the store: a night that opened it in between wrote to the file the rename unlinked (its work lost), or
    under the snapshot's copy (a torn snapshot). After the rename the store is the fresh file, which a
    night may open."""
    import os

    def held() -> bool:
        return store_is_held(built.store)

    seen = []
    real_replace, real_write = os.replace, store._write_snapshot

    def replace(src, dst):
        if os.path.abspath(dst) == str(built.store):
            seen.append(("renamed over the store", held()))
        real_replace(src, dst)

    def write_snapshot(*args):
        written = real_write(*args)
        seen.append(("snapshot written", held()))
        return written

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(store, "_write_snapshot", write_snapshot)
    purge(built, "user_id", "bob", "right to erasure request 2026-11-30")
    assert [what for what, _ in seen] == ["renamed over the store", "snapshot written"]
    assert all(locked for _, locked in seen), seen


def test_a_purge_derives_the_night_again_with_the_settings_it_ran_with(tmp_path):
    from memcurator.config import CurationConfig
    from memcurator.night import derive_night
    from memcurator.rederive import night_settings

    home = Home.from_env(tmp_path / "home").ensure()
    write_jsonl(home.landing / "a.jsonl", [
        write("rotate the vault keys every fortnight", entry_id="g1", namespace=GONE, ts="2026-11-01T10:00:00Z"),
        write(NEIGHBOUR, entry_id="s1", namespace=STAYS, ts="2026-10-01T10:00:00Z"),
    ])
    as_of = datetime(2026, 11, 2)
    ran_with = CurationConfig(max_idle_days=365, noise_floor=0.5)
    with store.connect(home.store) as conn:
        assert ingest.ingest_landing(conn, home.landing, home.lake, ran_with).valid_events == 2
        derive_night(conn, as_of, ran_with)
        states = conn.execute("select entry_id, state, rule from core.entry_lifecycle where namespace = ?", [STAYS]).fetchall()
    purge(home, "namespace", GONE, "tenant left")
    with store.connect(home.store, read_only=True) as conn:
        settings = night_settings(conn)
        assert (settings["max_idle_days"], settings["noise_floor"]) == (365, 0.5)
        assert conn.execute("select entry_id, state, rule from core.entry_lifecycle").fetchall() == states


def test_a_purge_asks_the_chat_judge_at_its_own_url_or_removes_nothing(tmp_path, monkeypatch):
    """The night records a chat judge's endpoint with the query's values masked: a purge derives the night
    again with the endpoint the home's settings.toml gives, and without it refuses before removing
    anything (it would ask the masked URL)."""
    from memcurator import purge as purging
    from memcurator.config import CurationConfig, SettingsError
    from memcurator.night import derive_night

    home = Home.from_env(tmp_path / "home").ensure()
    write_jsonl(home.landing / "a.jsonl", [
        write("rotate the vault keys every fortnight", entry_id="g1", namespace=GONE, ts="2026-11-01T10:00:00Z"),
        write(NEIGHBOUR, entry_id="s1", namespace=STAYS, ts="2026-10-01T10:00:00Z"),
    ])
    endpoint = "https://judge.example/v1?api-key=s3cret&deployment=x"
    ran_with = CurationConfig(judge_endpoint=endpoint)  # two entries: no pair to ask about
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, home.lake, ran_with)
        derive_night(conn, datetime(2026, 11, 2), ran_with)
    landed = (home.landing / "a.jsonl").read_bytes()
    with pytest.raises(SettingsError, match=r"api-key=\*\*\*&deployment=\*\*\*.*settings.toml"):
        purge(home, "namespace", GONE, "tenant left")
    assert (home.landing / "a.jsonl").read_bytes() == landed
    with store.connect(home.store, read_only=True) as conn:
        assert conn.execute("select count(*) from raw.events where namespace = ?", [GONE]).fetchone() == (1,)
    derived_with = []
    monkeypatch.setattr(purging, "derive_night", lambda conn, as_of, cfg: derived_with.append(cfg.judge_endpoint))
    home.settings.write_text(f'judge_endpoint = "{endpoint}"\n')
    purge(home, "namespace", GONE, "tenant left")
    assert derived_with == [endpoint]


def test_a_purge_needs_the_homes_settings_only_for_a_masked_judge_endpoint(tmp_path):
    """A settings.toml a night cannot read stops the nights, not a purge of a store whose nights asked no
    chat judge at a URL with a key."""
    from memcurator.config import SettingsError, read_settings
    from memcurator.night import ingest_and_derive

    home = Home.from_env(tmp_path / "home").ensure()
    write_jsonl(home.landing / "a.jsonl", [
        write("rotate the vault keys every fortnight", entry_id="g1", namespace=GONE, ts="2026-11-01T10:00:00Z"),
        write(NEIGHBOUR, entry_id="s1", namespace=STAYS, ts="2026-10-01T10:00:00Z"),
    ])
    with store.connect(home.store) as conn:
        ingest_and_derive(conn, home.landing, datetime(2026, 11, 2))
    home.settings.write_text("max_idle_days = 'sixty'\n")
    with pytest.raises(SettingsError):
        read_settings(home.settings)
    purge(home, "namespace", GONE, "tenant left")
    with store.connect(home.store, read_only=True) as conn:
        assert conn.execute("select distinct namespace from raw.events").fetchall() == [(STAYS,)]
