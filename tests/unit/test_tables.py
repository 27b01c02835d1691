"""Table declarations drive the DDL and the schema check."""

import duckdb

from memcurator import store
from memcurator.tables import ENTRIES, MEMORY_WRITES, TABLES, C, Table, schema_mismatches


def test_every_declared_table_creates_and_matches(conn):
    for table in TABLES.values():  # all first: a view's null counts read the tables it reads
        store.ensure_table(conn, table)
    for table in TABLES.values():
        assert schema_mismatches(conn, table) == [], table.qualified


def test_schema_check_notices_drift(conn):
    # a column added by hand, a type changed, a null in a non-null column: each is reported
    store.ensure_table(conn, ENTRIES)
    conn.execute("alter table core.entries add column extra int")
    assert any("columns" in p for p in schema_mismatches(conn, ENTRIES))
    conn.execute("alter table core.entries drop column extra")
    conn.execute("alter table core.entries alter column version_count type int")
    assert any("version_count" in p for p in schema_mismatches(conn, ENTRIES))


def test_missing_table_is_reported(conn):
    assert schema_mismatches(conn, ENTRIES) == ["core.entries does not exist"]


def test_every_table_states_its_grain_and_describes_every_column():
    for table in TABLES.values():
        assert table.grain.startswith("One "), table.qualified
        assert all(c.description for c in table.columns), table.qualified


def test_docs_catalogue_is_generated_from_the_declarations():
    from pathlib import Path

    from memcurator.catalogue import markdown

    docs = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
    assert docs.read_text().strip() == markdown().strip(), "regenerate: memcurator catalogue > docs/tables.md"


def test_long_texts_are_stored_uncompressed(tmp_path):
    # DuckDB would try every string compression on each segment of the texts (a third of the time it
    # takes to write them); the declaration pins the choice, and the rest of the table keeps DuckDB's choice
    # among the methods the store allows (store.DISABLED_COMPRESSION)
    with store.connect(tmp_path / "s.duckdb") as conn:
        store.ensure_table(conn, MEMORY_WRITES)
        conn.execute(
            "insert into core.memory_writes (event_id, namespace, entry_id, ts, actor, text, class, trust,"
            " tags, entry_hash) select 'e' || i, 'ns', 'm' || i, timestamp '2026-01-01', 'agent',"
            " 'lesson number ' || i || ' about the ledger service', 'lesson', 1.0, [], hash('ns', 'm' || i)"
            " from range(50000) r(i)")
        conn.execute("checkpoint")
        used = dict(conn.execute("select column_name, list_distinct(list(compression)) from "
                                 "pragma_storage_info('core.memory_writes') where segment_type <> 'VALIDITY' "
                                 "group by column_name").fetchall())
    assert used["text"] == ["Uncompressed"]
    assert "Uncompressed" not in used["namespace"] and "Uncompressed" not in used["actor"]


def test_a_cache_is_kept_in_its_declared_shape_and_dropped_in_another(conn):
    """store.ensure_cache keeps a side table stored as declared (the declarations name DuckDB's own
    types, so the comparison holds) and drops one stored with other columns."""
    from memcurator.night import SIDE_TABLES

    comment = "select comment from duckdb_tables() where schema_name = $s and table_name = $n"
    for name in SIDE_TABLES:
        table = TABLES[name]
        store.ensure_table(conn, table)
        conn.execute(f"comment on table {table.qualified} is 'kept'")
        store.ensure_cache(conn, table)
        assert conn.execute(comment, {"s": table.schema, "n": table.name}).fetchone() == ("kept",), name
    conn.execute("alter table core.judged_pairs add column as_of timestamp")
    store.ensure_cache(conn, TABLES["core.judged_pairs"])
    assert conn.execute(comment, {"s": "core", "n": "judged_pairs"}).fetchone() == (None,)
    assert schema_mismatches(conn, TABLES["core.judged_pairs"]) == []


def test_a_large_tables_profile_reads_a_sample_and_says_so(monkeypatch):
    from assets import _tables

    conn = duckdb.connect()
    conn.execute("create schema core")
    conn.execute("create table core.t as select range as a, case when range % 4 = 0 then null else 'x' end as b "
                 "from range(300000)")
    t = Table("core", "t", "One row per test row.", (C("a", "BIGINT", "A number.", False), C("b", "VARCHAR", "Text.")))
    monkeypatch.setattr(_tables, "PROFILE_SAMPLE_FROM", 1_000_000)
    exact = _tables.materialized(conn, t).metadata["profile"].value
    assert "sample" not in exact and "| b | VARCHAR | 75000 |" in exact  # below the threshold every row is read
    monkeypatch.setattr(_tables, "PROFILE_SAMPLE_FROM", 100_000)
    result = _tables.materialized(conn, t)
    sampled = result.metadata["profile"].value
    assert result.metadata["dagster/row_count"].value == 300_000  # the count is every row's
    header, *_, b_row = sampled.splitlines()
    read = int(header.split("Over a sample of ")[1].split(" of the")[0].replace(",", ""))
    assert 0 < read < 300_000 and header.endswith("of the 300,000 rows (system sampling, 10 percent).")
    nulls = int(b_row.split("|")[3])
    assert abs(nulls / read - 0.25) < 0.02  # the share of nulls, read from the sample


def test_the_schema_check_counts_nulls_of_every_non_null_column_in_one_read():
    conn = duckdb.connect()
    conn.execute("create schema core")
    conn.execute("create view core.v as select * from (values (1, null, null), (2, 'x', null), (3, null, 'y')) t(a, b, c)")
    t = Table("core", "v", "One row per test row.",
              (C("a", "INTEGER", "A number.", False), C("b", "VARCHAR", "Text.", False), C("c", "VARCHAR", "Text.", False)))
    assert schema_mismatches(conn, t) == ["b: 2 nulls in a non-nullable column", "c: 2 nulls in a non-nullable column"]


def test_a_views_declared_null_counts_stand_for_reading_it_and_the_rest_are_counted_through_it():
    conn = duckdb.connect()
    conn.execute("create schema core")
    conn.execute("create table core.t as select * from (values (1, null), (2, 'x'), (3, null)) t(a, b)")
    conn.execute("create view core.v as select a, b, case when a > 1 then null else 'z' end as c from core.t")
    cols = (C("a", "INTEGER", "A number.", False), C("b", "VARCHAR", "Text.", False), C("c", "VARCHAR", "Text.", False))
    counted = Table("core", "v", "One row per test row.", cols,
                    nulls="select count(*) filter (where b is null) as b from core.t")
    assert schema_mismatches(conn, counted) == ["b: 2 nulls in a non-nullable column",
                                                "c: 2 nulls in a non-nullable column"]
    # the declared query is what is read for its columns: one that counts wrongly shows so
    wrong = Table("core", "v", "One row per test row.", cols, nulls="select 0 as b, 5 as x")
    assert schema_mismatches(conn, wrong) == ["c: 2 nulls in a non-nullable column"]


def _derived_demo_store(tmp_path, writes: int, seed: int):
    """A demo fleet ingested and derived (two namespaces, ten days): its home and the store resource."""
    from datetime import date

    from memcurator import demo, night
    from memcurator.entries import as_of_for_night
    from memcurator.home import Home
    from pipelines.resources import StoreResource

    home = Home.from_env(tmp_path / "home").ensure()
    demo.generate(home.landing, home.truth, writes=writes, namespaces=2, days=10, seed=seed, end=date(2026, 11, 29))
    with store.connect(home.store) as conn:
        night.ingest_and_derive(conn, home.landing, as_of_for_night("2026-11-29"))
    return home, StoreResource(home=str(home.root))


def test_a_retired_entry_in_the_recall_views_stored_rows_trips_its_check(tmp_path):
    # the recall view's checks read its rows as stored (mart.recall_ranking), not through the view
    from checks.lifecycle import no_archived_expired_or_superseded_entry_in_recall_view as check

    home, resource = _derived_demo_store(tmp_path, writes=300, seed=11)
    assert check(store=resource).passed
    with store.connect(home.store) as conn:  # a row damaged outside the pipeline
        conn.execute("update mart.recall_ranking set state = 'archived' "
                     "where rowid = (select min(rowid) from mart.recall_ranking)")
    result = check(store=resource)
    assert not result.passed and result.metadata["violations"].value == 1


def test_the_one_state_check_counts_entries_without_a_state_states_without_an_entry_and_repeated_ones(tmp_path):
    from checks.lifecycle import every_entry_has_one_state as check

    home, resource = _derived_demo_store(tmp_path, writes=200, seed=5)
    assert check(store=resource).passed
    with store.connect(home.store) as conn:  # damaged outside the pipeline: one of each kind
        first, second, third = [r[0] for r in conn.execute(
            "select entry_id from core.entry_lifecycle order by namespace, entry_id limit 3").fetchall()]
        conn.execute("delete from core.entry_lifecycle where entry_id = ?", [first])
        conn.execute("insert into core.entry_lifecycle select * from core.entry_lifecycle where entry_id = ?", [second])
        conn.execute("insert into core.entry_lifecycle select * replace ('no-such-entry' as entry_id) "
                     "from core.entry_lifecycle where entry_id = ?", [third])
    result = check(store=resource)
    assert not result.passed and result.metadata["violations"].value == 3


def test_the_pairs_check_counts_each_pair_with_a_side_outside_its_namespaces_entries_once(tmp_path):
    from checks.compression import near_duplicate_pairs_never_cross_namespaces as check

    home, resource = _derived_demo_store(tmp_path, writes=300, seed=11)
    with store.connect(home.store) as conn:
        assert conn.execute("select count(*) from core.near_duplicate_pairs").fetchone()[0] > 0
        assert check(store=resource).passed
        other = conn.execute("select max(namespace) from core.entries").fetchone()[0]
        # damaged outside the pipeline: one side gone, both sides gone, and a pair under another namespace
        conn.execute("""insert into core.near_duplicate_pairs
                        select * replace ('gone-b' as entry_b) from (from core.near_duplicate_pairs limit 1)
                        union all select * replace ('gone-a' as entry_a, 'gone-b' as entry_b)
                                  from (from core.near_duplicate_pairs limit 1)
                        union all select * replace (namespace || '-other' as namespace)
                                  from (from core.near_duplicate_pairs where namespace = ? limit 1)""", [other])
    result = check(store=resource)
    assert not result.passed and result.metadata["violations"].value == 3


def test_every_scoped_read_names_a_table_kept_by_entry_hash():
    """A line "-- scoped T" of a .sql file reads T's rows by the scope's hashes (sql.SCOPED_ROWS): T must
    be declared with the entry_hash column, or the stage would fail on its first incremental night."""
    import re
    from importlib import resources

    from memcurator import changes, night, sql  # noqa: F401 (night imports every stage, which registers its tables)
    from memcurator.tables import ENTRY_HASH

    scoped, keyed = {}, {}
    files = [p for p in resources.files("memcurator").joinpath("sql").iterdir() if p.name.endswith(".sql")]
    for path in files:
        for table in re.findall(r"^ *-- scoped ([\w.]+)$", path.read_text(), flags=re.M):
            scoped.setdefault(table, []).append(path.name)
            assert ENTRY_HASH.name in TABLES[table].column_names, (table, path.name)
        # read without their strings, joined on entry_key: only tables of the entries of core.entries, where a
        # hash no two of them share names one entry (changes.define_entry_key)
        for table in re.findall(r"^ *-- scoped keyed ([\w.]+)$", path.read_text(), flags=re.M):
            keyed.setdefault(table, []).append(path.name)
            assert ENTRY_HASH.name in TABLES[table].column_names and table in changes.KEYED_BY_ENTRIES, (table, path.name)
    assert len(scoped.keys() | keyed.keys()) >= 8  # the per-entry stages' inputs: entries, writes, recalls, usage, ...
    assert len(keyed) >= 5 and "entry_lifecycle.sql" in keyed["core.entry_usage"]
    lifecycle = sql.load("entry_lifecycle")
    assert "-- scoped" not in lifecycle
    assert ("select * from core.entries where $all\n    union all\n    select * from core.entries "
            "semi join stage_hashes using (entry_hash) where not $all") in lifecycle
    assert ("select * exclude (namespace, entry_id), entry_key(namespace, entry_id, entry_hash) as entry_key\n"
            "    from core.entry_usage semi join stage_hashes using (entry_hash) where not $all") in lifecycle


def test_every_scoped_pair_read_names_a_table_of_pairs():
    """A line "-- scoped pairs T" reads the rows of T with either side in the scope (sql.SCOPED_PAIRS), the rows
    changes.pairs_of_scope reads: T must hold pairs of entries of a namespace (entry_a, entry_b)."""
    import re
    from importlib import resources

    from memcurator import changes, night, sql  # noqa: F401 (night imports every stage, which registers its tables)

    found = []
    for path in resources.files("memcurator").joinpath("sql").iterdir():
        if not path.name.endswith(".sql"):
            continue
        for table in re.findall(r"^ *-- scoped pairs ([\w.]+)$", path.read_text(), flags=re.M):
            found.append(table)
            assert {"namespace", "entry_a", "entry_b"} <= set(TABLES[table].column_names), (table, path.name)
            loaded = sql.load(path.name.removesuffix(".sql"))
            assert "-- scoped" not in loaded
            rows = " ".join(sql.pair_row_ids(table).split())
            assert rows in " ".join(loaded.split()) and rows in " ".join(changes.pairs_of_scope(table).split())
    # the curators' worklist and the recall view read the conflicts of their scope so
    assert found == ["core.contradictions"] * 2


def test_every_read_scoped_by_a_column_names_an_entry_column_of_its_table():
    """A line "-- scoped T by C" reads the rows of T whose column C names an entry of the scope (sql.SCOPED_BY):
    T must hold entries of a namespace in C."""
    import re
    from importlib import resources

    from memcurator import night, sql  # noqa: F401 (night imports every stage, which registers its tables)

    found = []
    for path in resources.files("memcurator").joinpath("sql").iterdir():
        if not path.name.endswith(".sql"):
            continue
        for table, column in re.findall(r"^ *-- scoped ([\w.]+) by (\w+)$", path.read_text(), flags=re.M):
            found.append((path.name, table, column))
            assert {"namespace", column} <= set(TABLES[table].column_names), (table, column, path.name)
            loaded = sql.load(path.name.removesuffix(".sql"))
            assert "-- scoped" not in loaded
            rows = (f"select t.* from {table} as t semi join stage_scope as s "
                    f"on s.namespace = t.namespace and s.entry_id = t.{column} where not $all")
            assert rows in " ".join(loaded.split())
    # the importance's and the lifecycle's later copies, the lifecycle's accepted links
    assert sorted(found) == [("entry_importance.sql", "core.near_duplicate_pairs", "entry_a"),
                             ("entry_lifecycle.sql", "core.near_duplicate_pairs", "entry_a"),
                             ("entry_lifecycle.sql", "core.supersede_links", "entry_id")]
