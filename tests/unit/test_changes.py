"""Stages kept incrementally (memcurator/changes.py) give the tables a full derivation gives, night after
night, and derive again only what their inputs or the date moved."""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta

import pytest

from memcurator import changes, contradictions, decisions, entries, ingest, night, store
from memcurator.config import CurationConfig
from memcurator.crash import table_hashes
from memcurator.entries import as_of_for_night
from memcurator.home import Home
from memcurator.tables import AS_OF, ENTRY_HASH, NS, TABLES, C, Table, with_row_hash
from tests.conftest import ev, write, write_jsonl
from tests.unit.test_nearindex import FIRST, fleet  # noqa: F401 (the same demo fleet, a fixture of this module too)

CFG = CurationConfig()
KEPT = ["core.entry_usage", "core.entry_generality", "core.entry_importance", "core.entry_lifecycle",
        "core.principle_proposals", "core.entry_score_parts", "mart.recall_ranking", "core.entry_text_features",
        "core.contradiction_candidates", "core.contested_entries", "core.contradictions", "core.supersede_links"]


def _derive(path, day: date) -> None:
    with store.connect(path) as conn:
        night.derive_night(conn, as_of_for_night(day), CFG)


def _fresh(fleet: Home, tmp_path, day: date) -> dict[str, str]:
    """The tables of the night ``day`` derived in full, on a copy of the fleet's store (made once a test: a night
    the test derives again compares with the same store)."""
    path = tmp_path / f"fresh-{day}.duckdb"
    if not path.exists():
        shutil.copyfile(fleet.store, path)
        _derive(path, day)
    return _comparable(table_hashes(path))


def _comparable(hashes: dict[str, str]) -> dict[str, str]:
    # the health history keeps earlier nights (test_nearindex compares its slice)
    return {k: v for k, v in hashes.items() if k != "mart.store_health"}


def _views(path) -> dict[str, list]:
    """The views a night makes over its tables, read whole (table_hashes reads tables)."""
    with store.connect(path, read_only=True) as conn:
        return {view: conn.execute(f"select * from {view} order by all").fetchall()
                for view in ("core.curation_audit_log", "core.supersede_suggestions", "mart.recall_view")}


def _refreshes(path) -> dict[str, tuple[bool, int]]:
    """Per kept table: whether its last refresh derived everything, and how many entries it changed."""
    with store.connect(path, read_only=True) as conn:
        return {t: (all_, n) for t, all_, n in conn.execute(
            "select r.table_name, r.derived_all, count(c.entry_id) from work.refreshes as r "
            "left join work.changes as c using (table_name) group by all").fetchall()}


def test_night_by_night_every_table_is_the_full_derivations(fleet, tmp_path):
    chained = tmp_path / "chained.duckdb"
    shutil.copyfile(fleet.store, chained)
    for k in (0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 3, 5):
        day = FIRST + timedelta(days=k)
        _derive(chained, day)
        assert _comparable(table_hashes(chained)) == _fresh(fleet, tmp_path, day), f"night {day}"
        assert _views(chained) == _views(tmp_path / f"fresh-{day}.duckdb"), f"night {day}"
        kept = _refreshes(chained)
        with store.connect(chained, read_only=True) as conn:
            total = conn.execute("select count(*) from core.entries").fetchone()[0]
            assert conn.execute("select count(*) from core.contested_entries").fetchone()[0] > 0  # a worklist to keep
        if k in (1, 2, 4, 5, 6, 7):  # forwards, after a first night: what changed, not everything
            for table in KEPT:
                derived_all, changed = kept[table]
                assert not derived_all and changed < total, (day, table, kept[table], total)


def test_entries_sharing_a_hash_only_widen_the_reads(fleet, tmp_path):
    """A night reads the rows of the entries it derives again by their hash (tables.ENTRY_HASH), then matches
    them by (namespace, entry_id): with every entry of a namespace sharing one hash (each such read takes
    whole namespaces), night after night every table is still the full derivation's."""
    expression = ENTRY_HASH.expression
    object.__setattr__(ENTRY_HASH, "expression", "hash({row}namespace)")
    try:
        chained = tmp_path / "chained.duckdb"
        shutil.copyfile(fleet.store, chained)
        for k in (0, 1, 2, 5):
            day = FIRST + timedelta(days=k)
            _derive(chained, day)
            assert _comparable(table_hashes(chained)) == _fresh(fleet, tmp_path, day), f"night {day}"
            assert _views(chained) == _views(tmp_path / f"fresh-{day}.duckdb"), f"night {day}"
            if k:
                assert not any(kept[table][0] for kept in [_refreshes(chained)] for table in KEPT)
        with store.connect(chained, read_only=True) as conn:
            assert conn.execute("select count(distinct entry_hash), count(distinct namespace), count(*) "
                                "from core.entries").fetchone() == (5, 5, conn.execute(
                                    "select count(*) from core.entries").fetchone()[0])
    finally:
        object.__setattr__(ENTRY_HASH, "expression", expression)


def test_a_stage_joins_on_the_hash_only_where_it_names_one_entry(fleet, tmp_path, monkeypatch):
    """The reads of "-- scoped keyed" lines join on the hash alone, without the strings, where no two entries of
    core.entries share a hash of the scope (changes.define_entry_key), and on the strings otherwise. An entry
    new on the second night is given the hash of an entry of the first: the nights that read either join on
    the strings, a night that reads neither on the hash, and night after night every table is the full
    derivation's (which, with the two in the store, joins on the strings)."""
    entries = {}
    for k in (0, 1):
        path = tmp_path / f"before-{k}.duckdb"
        shutil.copyfile(fleet.store, path)
        _derive(path, FIRST + timedelta(days=k))
        with store.connect(path, read_only=True) as conn:
            # whether the entry stays out of the lifecycle's scope by itself (no date rule before the last
            # night below, no case record, no cluster)
            entries[k] = conn.execute(
                """select namespace, entry_id, class <> 'episodic' and coalesce(next_change_at > $later, true)
                          and entry_id not in (select entry_id from core.near_duplicate_clusters)
                   from core.entry_lifecycle order by all""",
                {"later": as_of_for_night(FIRST + timedelta(days=10))}).fetchall()
    old = next((ns, e) for ns, e, quiet in entries[0] if quiet)
    new = min((ns, e) for ns, e, quiet in entries[1] if quiet and (ns, e) not in {(n, i) for n, i, _ in entries[0]})
    keyed, define = [], changes.define_entry_key  # (night, every entry, joined on the hash)

    def spied(conn, every_entry: bool) -> bool:
        keyed.append((day, every_entry, define(conn, every_entry)))
        return keyed[-1][2]

    monkeypatch.setattr(changes, "define_entry_key", spied)
    expression = ENTRY_HASH.expression
    object.__setattr__(ENTRY_HASH, "expression", f"if({{row}}namespace = '{new[0]}' and {{row}}entry_id = '{new[1]}', "
                                                 f"hash('{old[0]}', '{old[1]}'), hash({{row}}namespace, {{row}}entry_id))")
    try:
        chained = tmp_path / "chained.duckdb"
        shutil.copyfile(fleet.store, chained)
        for k in (0, 1, 8, 9):  # the log ends on the eighth day: the ninth night's scope is what the date moves
            day = FIRST + timedelta(days=k)
            _derive(chained, day)
            if k in (1, 9):  # (the nights between are test_night_by_night_every_table_is_the_full_derivations')
                assert _comparable(table_hashes(chained)) == _fresh(fleet, tmp_path, day), f"night {day}"
        with store.connect(chained, read_only=True) as conn:
            assert conn.execute("select count(*) - count(distinct entry_hash) from core.entries").fetchone()[0] == 1
            # the two apart: joined on their shared hash, each would take the other's rows as well
            assert conn.execute("select count(*), count(distinct (namespace, entry_id)) from core.entry_lifecycle "
                                "where entry_id in ($old, $new)", {"old": old[1], "new": new[1]}).fetchone() == (2, 2)
    finally:
        object.__setattr__(ENTRY_HASH, "expression", expression)
    incremental = [(night_, by_hash) for night_, every_entry, by_hash in keyed if not every_entry]
    assert (FIRST, True, True) in keyed  # the first night, before the new entry: no two entries share a hash
    assert (FIRST + timedelta(days=1), False) in incremental  # the new entry, in the scope with the old one's hash
    assert (FIRST + timedelta(days=9), True) in incremental  # neither in the scope: joined on the hash
    assert all(not by_hash for night_, every_entry, by_hash in keyed if every_entry and night_ > FIRST)


def test_joined_on_the_strings_the_keyed_stages_give_the_same_tables(fleet, tmp_path, monkeypatch):
    """The keyed stages joined on the strings every night (as where two entries share a hash), in full and then
    incrementally, give the tables the full derivations give joined on the hash."""
    joined = []

    def on_the_strings(conn, every_entry: bool) -> bool:
        conn.execute(changes.ENTRY_KEY_MACRO.format(key=changes.ENTRY_KEY_BY_STRINGS))
        joined.append(every_entry)
        return False

    chained = tmp_path / "chained.duckdb"
    shutil.copyfile(fleet.store, chained)
    for k in (0, 8):
        day = FIRST + timedelta(days=k)
        expected = _fresh(fleet, tmp_path, day)  # joined on the hash
        with monkeypatch.context() as patched:
            patched.setattr(changes, "define_entry_key", on_the_strings)
            _derive(chained, day)
        assert _comparable(table_hashes(chained)) == expected, f"night {day}"
    assert set(joined) == {True, False}  # full and incremental refreshes (every_entry), both on the strings


def test_a_night_without_new_events_moves_only_what_the_date_moves(fleet, tmp_path):
    """The log ends on the eighth day: forty days later only the date rules move entries (idle ones are
    archived, old case records age out), exactly as a full derivation of that night."""
    chained = tmp_path / "chained.duckdb"
    shutil.copyfile(fleet.store, chained)
    last, later = FIRST + timedelta(days=8), FIRST + timedelta(days=48)
    _derive(chained, last)
    with store.connect(chained, read_only=True) as conn:
        before = dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall())
    _derive(chained, later)
    assert _comparable(table_hashes(chained)) == _fresh(fleet, tmp_path, later)
    with store.connect(chained, read_only=True) as conn:
        after = dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall())
        moved = conn.execute("select count(*) from work.changes where table_name = 'core.entry_lifecycle'").fetchone()[0]
    assert before.keys() == after.keys()
    really_moved = sum(before[e] != after[e] for e in before)
    assert really_moved > 0 and moved >= really_moved
    assert not _refreshes(chained)["core.entry_lifecycle"][0]
    # the other stages saw no input change at all
    assert all(_refreshes(chained)[t] == (False, 0) for t in ("core.entry_usage", "core.entry_generality"))


def test_curator_decisions_between_nights(fleet, tmp_path):
    home = Home.from_env(tmp_path / "home").ensure()
    shutil.copyfile(fleet.store, home.store)
    day = FIRST + timedelta(days=4)
    _derive(home.store, day)
    with store.connect(home.store, read_only=True) as conn:
        clusters = conn.execute("select namespace, cluster_id, canonical_entry_id from core.principle_proposals "
                                "order by all limit 2").fetchall()
    assert len(clusters) == 2
    when = as_of_for_night(day) + timedelta(hours=3)
    decisions.record(home.decisions, clusters[0][0], "cluster", clusters[0][1], "approve", "one lesson", "kim",
                     {"canonical_entry_id": clusters[0][2]}, now=when)
    decisions.record(home.decisions, clusters[1][0], "cluster", clusters[1][1], "reject", "not the same", "kim",
                     now=when)
    with store.connect(home.store) as conn:
        ingest.ingest_decisions(conn, home.decisions, CFG)
    fresh = tmp_path / "fresh.duckdb"
    shutil.copyfile(home.store, fresh)
    nxt = day + timedelta(days=1)
    _derive(home.store, nxt)
    _derive(fresh, nxt)  # the fresh store has the decisions, and no night before
    assert _comparable(table_hashes(home.store)) == _comparable(table_hashes(fresh))
    with store.connect(home.store, read_only=True) as conn:
        merged = conn.execute("select count(*) from core.entry_lifecycle where state = 'merged'").fetchone()[0]
    assert merged >= 2 and not _refreshes(home.store)["core.entry_lifecycle"][0]


def test_an_input_refreshed_from_another_generation_makes_its_readers_derive_everything(fleet, tmp_path):
    """The stages after core.entries read what it changed since they read it: when it was refreshed
    twice in between (a night run again up to it), its last changes are not all of them."""
    path = tmp_path / "store.duckdb"
    shutil.copyfile(fleet.store, path)
    _derive(path, FIRST + timedelta(days=5))
    as_of = as_of_for_night(FIRST + timedelta(days=7))
    with store.connect(path) as conn:
        for _ in range(2):  # the second refresh changes nothing, and starts from the first
            entries.build_memory_writes(conn, as_of)
            entries.build_entries(conn, as_of)
        assert changes.last_refresh(conn, "core.entries").derived_all is False
        for name, build in night.STEPS[2:]:
            build(conn, as_of, CFG)
    kept = _refreshes(path)
    assert kept["core.entry_usage"][0] and kept["core.entry_lifecycle"][0]
    assert _comparable(table_hashes(path)) == _fresh(fleet, tmp_path, FIRST + timedelta(days=7))


def test_after_forgetting_the_next_night_derives_everything_and_the_same_tables(fleet, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copyfile(fleet.store, path)
    _derive(path, FIRST + timedelta(days=6))
    with store.connect(path) as conn:
        assert conn.execute("select count(*) from work.refreshes").fetchone()[0] >= len(KEPT)
        changes.forget(conn)
        assert conn.execute("select count(*) from work.refreshes").fetchone()[0] == 0
        assert conn.execute("select count(*) from work.changes").fetchone()[0] == 0
    _derive(path, FIRST + timedelta(days=7))
    assert all(_refreshes(path)[t][0] for t in KEPT)
    assert _comparable(table_hashes(path)) == _fresh(fleet, tmp_path, FIRST + timedelta(days=7))


def test_caches_stored_with_the_columns_of_before_are_dropped_and_their_work_done_again(fleet, tmp_path):
    """The side tables (night.SIDE_TABLES) keep work for the next night and carry no as_of; a store kept
    by code that stamped them (or kept other columns) gets them derived again, not read."""
    path = tmp_path / "store.duckdb"
    shutil.copyfile(fleet.store, path)
    _derive(path, FIRST + timedelta(days=6))
    with store.connect(path) as conn:
        for name in ("core.entry_sources", "core.judged_pairs", "core.entry_text_features"):
            conn.execute(f"alter table {name} add column as_of timestamp")
            conn.execute(f"update {name} set as_of = $a", {"a": as_of_for_night(FIRST + timedelta(days=6))})
        # the version of the text features names their declaration: the code of before had another
        conn.execute("update work.refreshes set version = 'before' where table_name = 'core.entry_text_features'")
    _derive(path, FIRST + timedelta(days=7))
    with store.connect(path, read_only=True) as conn:
        for name in night.SIDE_TABLES:
            declared = [c.name for c in TABLES[name].columns]
            assert [d[0] for d in conn.execute(f"select * from {name} limit 0").description] == declared, name
            assert "as_of" not in declared, name
    assert _refreshes(path)["core.entry_text_features"][0]
    assert _comparable(table_hashes(path)) == _fresh(fleet, tmp_path, FIRST + timedelta(days=7))


# Small logs written by hand, from START on.
START = datetime(2026, 10, 1)


def ts(day: float) -> str:
    return (START + timedelta(days=day)).isoformat() + "Z"


def recall(entry_id: str, day: float, namespace: str = "ns-a") -> dict:
    return ev("memory.recall", {"query": "q", "results": [{"entry_id": entry_id, "rank": 1}]}, ts=ts(day),
              namespace=namespace)


def _two_nights(tmp_path, first: list, second: list, nights: tuple[float, float], cfg: CurationConfig = CFG,
                between=None) -> tuple[Home, Home, dict]:
    """A store that derives the first night from ``first`` and, with ``second`` landed (and ``between``
    called on it), the last night; and a store that derives only the last night from both. Returns
    them with the first store's lifecycle after its first night (entry_id -> (rule, last_activity_at))."""
    chained, fresh = (Home.from_env(tmp_path / name).ensure() for name in ("chained", "fresh"))
    write_jsonl(chained.landing / "a.jsonl", first)
    with store.connect(chained.store) as conn:
        ingest.ingest_landing(conn, chained.landing, None, cfg)
        night.derive_night(conn, START + timedelta(days=nights[0]), cfg)
        before = {e: (r, t) for e, r, t in conn.execute(
            "select entry_id, rule, last_activity_at from core.entry_lifecycle").fetchall()}
    write_jsonl(chained.landing / "b.jsonl", second)
    if between:
        between(chained)
    shutil.copytree(chained.landing, fresh.landing, dirs_exist_ok=True)
    shutil.copytree(chained.decisions, fresh.decisions, dirs_exist_ok=True)
    for home in (chained, fresh):
        with store.connect(home.store) as conn:
            ingest.ingest_landing(conn, home.landing, None, cfg)
            ingest.ingest_decisions(conn, home.decisions, cfg)
            night.derive_night(conn, START + timedelta(days=nights[1]), cfg)
    assert _comparable(table_hashes(chained.store)) == _comparable(table_hashes(fresh.store))
    return chained, fresh, before


def _lifecycle(home: Home) -> dict:
    with store.connect(home.store, read_only=True) as conn:
        return {e: (r, t) for e, r, t in conn.execute(
            "select entry_id, rule, last_activity_at from core.entry_lifecycle").fetchall()}


def test_entries_moved_by_a_case_cap_or_a_namespace_first_recalled_are_derived_again(tmp_path):
    """Neither input nor date moves these entries, another entry's change does: a newer case record
    pushes the oldest over the cap, and the first recall seen in a namespace makes idleness count there."""
    lesson = "prefer small reversible changes to configuration"
    first = ([write(lesson + f" in area {i}", entry_id=f"old{i}", ts=ts(0), namespace="imported",
                    data={"generality": 0.2}) for i in range(3)]
             + [write(text, entry_id=f"c{i}", cls="episodic", ts=ts(i)) for i, text in enumerate(
                 ["the billing export failed on a malformed invoice row", "a customer asked for the audit trail of march"])]
             + [recall("c1", 2)])
    second = [recall("old0", 40, "imported"),
              write("deploy of the search cluster rolled back after latency alarms", entry_id="c7", cls="episodic",
                    ts=ts(41))]
    chained, _, before = _two_nights(tmp_path, first, second, (35, 45), CurationConfig(case_max_count=2))
    after = _lifecycle(chained)
    assert (before["c0"][0], after["c0"][0]) == ("episodic_class", "case_over_count")
    assert (before["old1"][0], after["old1"][0]) == ("in_use", "decay") and after["old0"][0] == "in_use"
    assert not _refreshes(chained.store)["core.entry_lifecycle"][0]


def test_a_cluster_that_loses_its_first_member_loses_its_proposal(tmp_path):
    """The cluster takes its id from its earliest member: when that member is written anew with other
    words, the proposal under the old id goes; a decision stamped before the night already derived, and
    landing only after it, counts too."""
    from tests.unit.test_clustering import PARAPHRASES

    first = [write(t, entry_id=f"e{i}", ts=ts(i), run_id=f"r{i}") for i, t in enumerate(PARAPHRASES[:3])]
    first.append(recall("e1", 4))
    second = [write("the staging cluster runs on spot instances since the budget review", entry_id="e0", ts=ts(6))]

    def late_decision_and_a_night(home: Home) -> None:
        with store.connect(home.store) as conn:
            (cluster,) = conn.execute("select cluster_id from core.principle_proposals").fetchone()
        decisions.record(home.decisions, "ns-a", "cluster", cluster, "reject", "not one lesson", "kim",
                         now=START + timedelta(days=4, hours=12))
        with store.connect(home.store) as conn:
            ingest.ingest_decisions(conn, home.decisions, CFG)
            night.derive_night(conn, START + timedelta(days=5, hours=6), CFG)  # before the new write
            assert conn.execute("select status from core.principle_proposals").fetchall() == [("rejected",)]

    chained, _, _ = _two_nights(tmp_path, first, second, (5, 7), between=late_decision_and_a_night)
    with store.connect(chained.store, read_only=True) as conn:
        assert conn.execute("select count(*) from core.principle_proposals").fetchone()[0] == 0
    assert not _refreshes(chained.store)["core.principle_proposals"][0]


def test_a_restatement_moves_the_last_activity_of_its_whole_cluster(tmp_path):
    """A member written again with the same words changes no edge and no cluster (and a cluster of two
    has no proposal to change); its near-duplicate counts the write as its activity too."""
    from tests.unit.test_clustering import PARAPHRASES

    first = [write(t, entry_id=f"e{i}", ts=ts(i), run_id=f"r{i}") for i, t in enumerate(PARAPHRASES[:2])]
    first.append(recall("e0", 4))
    second = [write(PARAPHRASES[0], entry_id="e0", ts=ts(6), run_id="r9")]
    # no date rule reaches e1 (written on day 1) by the second night
    chained, _, before = _two_nights(tmp_path, first, second, (5, 7))
    assert _lifecycle(chained)["e1"][1] == START + timedelta(days=6) != before["e1"][1]
    assert not _refreshes(chained.store)["core.entry_lifecycle"][0]


def test_a_recall_leaving_a_boost_window_moves_the_score(tmp_path):
    """Nothing changes but the date: the recall falls out of the warm window (30 days) between nights."""
    home = Home.from_env(tmp_path / "home").ensure()
    write_jsonl(home.landing / "a.jsonl", [
        write("always pin the base image digest", entry_id="e", ts=ts(0), data={"generality": 2.0}), recall("e", 10)])
    boosts = []
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, None, CFG)
        for day in (12, 35, 45):  # recent, warm, none
            night.derive_night(conn, START + timedelta(days=day), CFG)
            boosts.append(conn.execute("select recency_boost from core.entry_scores").fetchone()[0])
    assert boosts == [CFG.recent_boost, CFG.warm_boost, 0.0]
    # the view applies the boost: no stored part was derived again for the date alone
    assert _refreshes(home.store)["core.entry_score_parts"] == (False, 0)


def test_a_late_earlier_write_moves_its_members_first_write_in_the_clusters(tmp_path):
    """A write that reaches the log late, stamped before the member's first one, moves only its first
    write: no pair or edge changes (the members keep their order), yet the cluster row shows the new time."""
    from tests.unit.test_clustering import PARAPHRASES

    first = [write(t, entry_id=f"e{i}", ts=ts(i), run_id=f"r{i}") for i, t in enumerate(PARAPHRASES[:3])]
    second = [write(PARAPHRASES[2], entry_id="e2", ts=ts(1.5), run_id="r8")]
    chained, _, _ = _two_nights(tmp_path, first, second, (5, 7))
    with store.connect(chained.store, read_only=True) as conn:
        moved = conn.execute("select first_written_at from core.near_duplicate_clusters where entry_id = 'e2'").fetchall()
    assert moved == [(START + timedelta(days=1.5),)]
    assert not _refreshes(chained.store)["core.near_duplicate_clusters"][0]


@pytest.mark.parametrize("before_tags, after_tags, paired", [(["export"], ["reporting"], True),
                                                             (["reporting"], ["export"], False)])
def test_a_subject_group_an_entry_leaves_or_joins_is_paired_again(tmp_path, monkeypatch, before_tags, after_tags,
                                                                  paired):
    """Past the cap a subject group is not paired by subject: when an entry leaves a group of three under
    a cap of two, the two left are paired; when it joins a group of two, they are not, though neither of
    them changed."""
    monkeypatch.setattr(contradictions, "SUBJECT_GROUP_CAP", 2)
    texts = ["the nightly export writes to the eu bucket", "retries of the export wait thirty seconds"]
    first = [write(t, entry_id=f"s{i}", ts=ts(i), data={"tags": ["export"]}) for i, t in enumerate(texts)]
    first.append(write("the export job runs as the batch user", entry_id="s2", ts=ts(2), data={"tags": before_tags}))
    second = [write("the batch user owns the reporting cron", entry_id="s2", ts=ts(5), data={"tags": after_tags})]
    chained, _, _ = _two_nights(tmp_path, first, second, (3, 6))
    with store.connect(chained.store, read_only=True) as conn:
        pairs = conn.execute("select entry_a, entry_b from core.contradiction_candidates where same_subject").fetchall()
    assert (("s0", "s1") in pairs) is paired
    assert not _refreshes(chained.store)["core.contradiction_candidates"][0]


TOY = Table("work", "toy", "One row per entry of a test.",
            (NS, C("entry_id", "VARCHAR", "The entry.", False), C("value", "INTEGER", "Counted as a change."),
             C("note", "VARCHAR", "Written, not counted as a change."), AS_OF), key=("namespace", "entry_id"))
TOY_QUERY = ("select *, $as_of::timestamp as as_of from toy_src where $all union all select *, $as_of::timestamp "
             "from toy_src semi join stage_scope using (namespace, entry_id) where not $all")


def test_a_refresh_rewrites_the_rows_derived_otherwise_and_records_the_changes_of_compared_columns(tmp_path):
    """The scope's rows derived as stored stay where they are; those derived otherwise are replaced, those no
    longer derived go; only a change in the compared columns (nulls equal) is recorded, with the rows before
    and after for a caller's own reading of them."""
    def refresh(conn, night: int, entries: str = "") -> None:
        changes.refresh_entries(conn, TOY, TOY_QUERY, {"as_of": datetime(2026, 1, night)}, "v1", [],
                                scope="select namespace, entry_id from toy_scope",
                                compare="namespace, entry_id, value", entries=entries)

    with store.connect(tmp_path / "toy.duckdb") as conn:
        conn.execute("create table toy_src (namespace varchar, entry_id varchar, value integer, note varchar)")
        conn.execute("insert into toy_src values ('n', 'same', 1, null), ('n', 'value', 2, 'x'), "
                     "('n', 'gone', 3, 'x'), ('n', 'note', 5, 'x'), ('n', 'outside', 6, 'x')")
        conn.execute("create table toy_scope as "
                     "select 'n' as namespace, unnest(['same', 'value', 'gone', 'new', 'note']) as entry_id")
        refresh(conn, 1)
        kept = conn.execute("select rowid from work.toy where entry_id = 'same'").fetchone()[0]
        conn.execute("update toy_src set value = 20 where entry_id = 'value'")
        conn.execute("update toy_src set note = 'y' where entry_id in ('note', 'outside')")
        conn.execute("delete from toy_src where entry_id = 'gone'")
        conn.execute("insert into toy_src values ('n', 'new', 4, null)")
        refresh(conn, 2, entries="select namespace, entry_id || ':' || value as entry_id from changed_rows")
        rows = conn.execute("select entry_id, value, note from work.toy order by entry_id").fetchall()
        assert rows == [("new", 4, None), ("note", 5, "y"), ("outside", 6, "x"), ("same", 1, None),
                        ("value", 20, "x")]
        assert conn.execute("select rowid from work.toy where entry_id = 'same'").fetchone()[0] == kept
        assert _toy_changes(conn) == {"value:2", "value:20", "gone:3", "new:4"}
        conn.execute("update toy_src set value = null where entry_id = 'value'")
        refresh(conn, 3)  # the default reading: the entries of the changed keys
        assert _toy_changes(conn) == {"value"}
        refresh(conn, 4)
        assert _toy_changes(conn) == set()


def test_each_refresh_starts_from_the_generation_the_last_one_recorded(tmp_path):
    """The refreshes are read in one statement (None for a table never refreshed), and a refresh records the
    generation it started from, read when it started: the chain its readers follow to derive only what changed."""
    def refresh(conn, night: int) -> None:
        changes.refresh_entries(conn, TOY, TOY_QUERY, {"as_of": datetime(2026, 1, night)}, "v1", [],
                                scope="select namespace, entry_id from toy_scope", compare="namespace, entry_id, value")

    with store.connect(tmp_path / "toy.duckdb") as conn:
        conn.execute("create table toy_src (namespace varchar, entry_id varchar, value integer, note varchar)")
        conn.execute("insert into toy_src values ('n', 'a', 1, null), ('n', 'b', 2, null)")
        conn.execute("create table toy_scope as select 'n' as namespace, unnest(['a', 'b']) as entry_id")
        refresh(conn, 1)
        first = changes.last_refreshes(conn, ["work.toy", "work.never"])
        assert first["work.never"] is None
        assert first["work.toy"].derived_all and first["work.toy"].previous_generation is None
        conn.execute("update toy_src set value = 3 where entry_id = 'b'")
        refresh(conn, 2)
        second = changes.last_refresh(conn, "work.toy")
        assert not second.derived_all and second.previous_generation == first["work.toy"].generation
        assert _toy_changes(conn) == {"b"}
        refresh(conn, 3)
        assert changes.last_refresh(conn, "work.toy").previous_generation == second.generation


def _toy_changes(conn) -> set[str]:
    return {r[0] for r in conn.execute("select entry_id from work.changes where table_name = 'work.toy'").fetchall()}


TOY_HASHED = Table("work", "toy_hashed", "One row per entry of a test, with a row hash.",
                   with_row_hash((NS, C("entry_id", "VARCHAR", "The entry.", False),
                                  C("value", "INTEGER", "Counted as a change."),
                                  C("note", "VARCHAR", "Written, not counted as a change."), ENTRY_HASH),
                                 leave_out=("note",)), key=("namespace", "entry_id"))
TOY_HASHED_QUERY = ("select * from toy_src where $all union all "
                    "select * from toy_src semi join stage_scope using (namespace, entry_id) where not $all")


def test_a_table_with_a_row_hash_is_compared_by_it(tmp_path):
    """A row derived again is written when its hash or a column the hash leaves out differs, and recorded as
    changed when its hash does; the stored rows are compared by their stored hash alone (a row changed
    outside the night, its hash not, is kept: the check of reproducibility is what finds such a row)."""
    def refresh(conn, night: int, **kw) -> None:
        changes.refresh_entries(conn, TOY_HASHED, TOY_HASHED_QUERY, {"as_of": datetime(2026, 1, night)}, "v1", [],
                                scope="select namespace, entry_id from toy_scope", **kw)

    def rows(conn) -> list:
        return conn.execute("select entry_id, value, note from work.toy_hashed order by entry_id").fetchall()

    with store.connect(tmp_path / "toy.duckdb") as conn:
        conn.execute("create table toy_src (namespace varchar, entry_id varchar, value integer, note varchar)")
        conn.execute("insert into toy_src values ('n', 'same', 1, 'x'), ('n', 'value', 2, 'x'), ('n', 'note', 3, 'x')")
        conn.execute("create table toy_scope as select 'n' as namespace, unnest(['same', 'value', 'note']) as entry_id")
        refresh(conn, 1)
        hashed = "hash(namespace::varchar, entry_id::varchar, value::integer)"
        assert conn.execute(f"select count(*) from work.toy_hashed where row_hash = {hashed}").fetchone()[0] == 3
        kept = conn.execute("select rowid from work.toy_hashed where entry_id = 'same'").fetchone()[0]
        conn.execute("update toy_src set value = 20 where entry_id = 'value'")
        conn.execute("update toy_src set note = 'y' where entry_id = 'note'")
        conn.execute("update work.toy_hashed set value = 99 where entry_id = 'same'")  # outside the night
        refresh(conn, 2)
        assert rows(conn) == [("note", 3, "y"), ("same", 99, "x"), ("value", 20, "x")]
        assert conn.execute("select rowid from work.toy_hashed where entry_id = 'same'").fetchone()[0] == kept
        assert {r[0] for r in conn.execute("select entry_id from work.changes "
                                           "where table_name = 'work.toy_hashed'").fetchall()} == {"value"}
        with pytest.raises(ValueError, match="row hash"):
            refresh(conn, 3, after=["select 1"])


def test_a_proposal_keeps_its_text_while_its_canonical_entry_is_unchanged(tmp_path):
    """A night that derives a cluster's proposal again (a member recalled) keeps the stored text of its
    canonical member, unless that entry changed: a new version of the canonical, the same words in another
    order (so it stays the canonical), gives the proposal its new text, as the full derivation does."""
    from tests.unit.test_clustering import PARAPHRASES

    first = [write(t, entry_id=f"e{i}", ts=ts(i), run_id=f"r{i}") for i, t in enumerate(PARAPHRASES)]
    peek = Home.from_env(tmp_path / "peek").ensure()
    write_jsonl(peek.landing / "a.jsonl", first)
    with store.connect(peek.store) as conn:
        ingest.ingest_landing(conn, peek.landing, None, CFG)
        night.derive_night(conn, START + timedelta(days=5), CFG)
        canonical, text = conn.execute("select canonical_entry_id, text from core.principle_proposals").fetchone()
    reordered = " ".join(reversed(text.split()))
    others = sorted({f"e{i}" for i in range(len(PARAPHRASES))} - {canonical})
    second = [recall(others[0], 6), write(reordered, entry_id=canonical, ts=ts(6), run_id="r9")]
    proposal = "select canonical_entry_id, text from core.principle_proposals"
    chained, _, _ = _two_nights(tmp_path, first, [recall(others[0], 6)], (5, 7))
    with store.connect(chained.store, read_only=True) as conn:
        assert conn.execute(proposal).fetchone() == (canonical, text)
    chained, _, _ = _two_nights(tmp_path / "new-version", first, second, (5, 7))
    with store.connect(chained.store, read_only=True) as conn:
        assert conn.execute(proposal).fetchone() == (canonical, reordered)
    assert not _refreshes(chained.store)["core.principle_proposals"][0]
