"""Namespace shards: a night split over N shards and merged gives the embedded night's tables."""

from __future__ import annotations

import shutil
from datetime import date, timedelta

import dagster as dg
import pyarrow as pa
import pytest

from memcurator import clustering, demo, ingest, night, scaleout, shards, store
from memcurator.config import CurationConfig
from memcurator.crash import table_hashes
from memcurator.entries import as_of_for_night
from memcurator.home import Home

NIGHT = date(2026, 11, 28)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """A fleet derived the embedded way: the reference tables."""
    work = tmp_path_factory.mktemp("shards")
    full = Home.from_env(work / "full").ensure()
    demo.generate(full.landing, full.truth, writes=1_500, namespaces=9, days=30, seed=5, end=NIGHT)
    with store.connect(full.store) as conn:
        night.ingest_and_derive(conn, full.landing, as_of_for_night(NIGHT), lake=full.lake)
    return work, full


def _sharded(work, full: Home, count: int, name: str) -> Home:
    home = Home.from_env(work / name).ensure()
    shutil.copytree(full.landing, home.landing, dirs_exist_ok=True)
    root, key = shards.ShardRoot(str(work / f"{name}-root")), NIGHT.isoformat()
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, home.lake, CurationConfig())
        per_shard = shards.split(conn, root, key, count)
    assert sum(per_shard.values()) == sum(1 for _ in _events(home))
    for shard in shards.shard_keys(count):
        shards.derive(root, key, count, shard)
    with store.connect(home.store) as conn:
        shards.merge(conn, root, key, count)
    return home


def _events(home: Home):
    with store.connect(home.store, read_only=True) as conn:
        yield from conn.execute("select event_id from raw.events").fetchall()


@pytest.mark.parametrize("count", [1, 4])
def test_sharded_night_gives_the_embedded_tables(fleet, count):
    work, full = fleet
    home = _sharded(work, full, count, f"sharded-{count}")
    assert table_hashes(home.store) == table_hashes(full.store)
    # and the views over them (the audit log reads the night's one settings row, every shard's alike)
    views = []
    for path in (home.store, full.store):
        with store.connect(path, read_only=True) as conn:
            views.append({v: conn.execute(f"select * from {v} order by all").fetchall()
                          for v in ("core.curation_audit_log", "core.supersede_suggestions", "mart.recall_view")})
    assert views[0] == views[1] and views[0]["core.curation_audit_log"]



def test_a_merge_refuses_shards_whose_settings_differ_and_leaves_the_store_as_it_was(fleet):
    """The views read one settings row; shards derived under other knobs would give two (every row of
    the audit log twice): the merge names the table and replaces nothing."""
    work, full = fleet
    home = Home.from_env(work / "differ").ensure()
    shutil.copyfile(full.store, home.store)
    root, key = shards.ShardRoot(str(work / "differ-root")), NIGHT.isoformat()
    with store.connect(home.store) as conn:
        shards.split(conn, root, key, 2)
    for shard in shards.shard_keys(2):
        shards.derive(root, key, 2, shard)
    second = f"{root.folder(key, 2, shards.shard_keys(2)[1])}/core.audit_settings.parquet"
    settings = root.read(second)
    root.write(second, settings.set_column(settings.schema.get_field_index("threshold"), "threshold",
                                           pa.array([0.7], pa.float64())))
    before = table_hashes(home.store)
    with store.connect(home.store) as conn, pytest.raises(ValueError, match="core.audit_settings: the shards"):
        shards.merge(conn, root, key, 2)
    assert table_hashes(home.store) == before

def test_a_merge_forgets_what_the_stages_last_changed(fleet):
    """The merged tables are not what the stages last wrote: the next night derives them in full."""
    work, full = fleet
    home = Home.from_env(work / "forget").ensure()
    shutil.copyfile(full.store, home.store)
    root, key = shards.ShardRoot(str(work / "forget-root")), NIGHT.isoformat()
    with store.connect(home.store) as conn:
        assert conn.execute("select count(*) from work.refreshes").fetchone()[0] > 0
        shards.split(conn, root, key, 2)
    for shard in shards.shard_keys(2):
        shards.derive(root, key, 2, shard)
    with store.connect(home.store) as conn:
        shards.merge(conn, root, key, 2)
        assert conn.execute("select count(*) from work.refreshes").fetchone()[0] == 0


def test_the_next_sharded_night_reuses_what_the_store_carried(fleet, monkeypatch):
    """Each shard reads back its slice of the flattened writes, the near-duplicate index, the judge's
    verdicts, ... with their versions; its tables are those of the embedded store's next night."""
    work, full = fleet
    home = _sharded(work, full, 2, "carried")
    following = NIGHT + timedelta(days=1)
    root, key = shards.ShardRoot(str(work / "carried-root")), following.isoformat()
    with store.connect(home.store) as conn:
        versions = dict(conn.execute("select table_name, comment from duckdb_tables() where comment <> ''").fetchall())
        shards.split(conn, root, key, 2)
    assert {"memory_writes", "entry_text_features"} <= set(versions), "the merge keeps each table's version"
    full_passes = []
    real = clustering.near_duplicate_pairs_and_keys
    monkeypatch.setattr(clustering, "near_duplicate_pairs_and_keys",
                        lambda entries, cfg: full_passes.append(entries.height) or real(entries, cfg))
    for shard in shards.shard_keys(2):
        shards.derive(root, key, 2, shard)
    assert not any(full_passes), "every shard with entries found its near-duplicates incrementally"
    with store.connect(home.store) as conn:
        shards.merge(conn, root, key, 2)
    embedded = work / "embedded-next.duckdb"
    shutil.copyfile(full.store, embedded)
    with store.connect(embedded) as conn:
        night.derive_night(conn, as_of_for_night(following))
    assert table_hashes(home.store) == table_hashes(embedded)


def test_a_namespace_never_splits_across_shards(fleet):
    work, full = fleet
    with store.connect(full.store, read_only=True) as conn:
        spread = conn.execute(f"select namespace, count(distinct {shards.shard_predicate(7)}) from raw.events "
                              "group by namespace having count(distinct " + shards.shard_predicate(7) + ") > 1").fetchall()
        used = conn.execute(f"select count(distinct {shards.shard_predicate(7)}) from raw.events").fetchone()[0]
    assert spread == []
    assert used > 1, "nine namespaces over seven shards should use more than one shard"


def test_merge_keeps_earlier_nights_of_the_health_history(fleet):
    work, full = fleet
    home = _sharded(work, full, 2, "health")  # its own store and shards: not another test's (xdist splits them)
    with store.connect(home.store) as conn:
        conn.execute("insert into mart.store_health select * replace (as_of - interval 1 day as as_of, "
                     "night - interval 1 day as night) from mart.store_health")
        before = conn.execute("select count(*) from mart.store_health").fetchone()[0]
        shards.merge(conn, shards.ShardRoot(str(work / "health-root")), NIGHT.isoformat(), 2)
        after = conn.execute("select count(*) from mart.store_health").fetchone()[0]
    assert before == after > 0


def test_shard_keys_sort_and_validate():
    assert shards.shard_keys(1) == ["00"]
    assert shards.shard_keys(128)[:2] == ["000", "001"] and shards.shard_keys(128)[-1] == "127"
    with pytest.raises(ValueError):
        shards.shard_keys(0)


def test_configuration_errors_are_clear(monkeypatch):
    monkeypatch.setenv(scaleout.SHARDS_ENV, "zero")
    with pytest.raises(ValueError, match="MEMCURATOR_SHARDS"):
        scaleout.shard_count()
    monkeypatch.setenv(scaleout.EXECUTOR_ENV, "threads")
    with pytest.raises(ValueError, match="MEMCURATOR_EXECUTOR"):
        scaleout.executor()


def test_celery_workers_get_the_executors_settings(tmp_path):
    env = {scaleout.BROKER_ENV: "redis://127.0.0.1:1/0", scaleout.VISIBILITY_ENV: "30"}
    path = scaleout.write_worker_config(tmp_path, env)
    settings: dict = {}
    exec(path.read_text(), settings)
    assert settings["broker_url"] == settings["result_backend"] == "redis://127.0.0.1:1/0"
    assert settings["task_acks_late"] is True
    assert settings["broker_transport_options"]["visibility_timeout"] == 30


def test_scaleout_definitions_load():
    from pipelines import scaleout as location

    dg.Definitions.validate_loadable(location.defs)
    shard_keys = {k.keys_by_dimension["shard"] for k in location.shard_derive_job().partitions_def.get_partition_keys()}
    assert sorted(shard_keys) == shards.shard_keys(scaleout.shard_count())
    three = location.build_scaleout_definitions(home="/nonexistent", root="/nonexistent", count=3)
    assert three.resolve_job_def("shard_derive").partitions_def == location.night_shard_partitions(3)


def test_the_nightly_automation_chains_split_every_shard_then_merge(fleet, tmp_path):
    """At 02:00 UTC the split is requested; each shard once the split landed; the merge once every shard did."""
    from datetime import datetime, timedelta, timezone

    from pipelines import scaleout as location

    work, full = fleet
    home = Home.from_env(tmp_path / "home").ensure()
    shutil.copytree(full.landing, home.landing, dirs_exist_ok=True)
    defs = location.build_scaleout_definitions(home=str(home.root), root=str(tmp_path / "root"), count=3)
    inputs, derived, merged = (dg.AssetKey(["shards", k]) for k in ("inputs", "derived", "store"))
    night, keys = NIGHT.isoformat(), shards.shard_keys(3)
    at = datetime(2026, 11, 29, 1, 50, tzinfo=timezone.utc)
    with dg.instance_for_test() as instance:
        def tick(minutes: int, cursor):
            return dg.evaluate_automation_conditions(defs, instance, evaluation_time=at + timedelta(minutes=minutes),
                                                     cursor=cursor)

        before = tick(0, None)
        assert before.total_requested == 0
        due = tick(15, before.cursor)
        assert due.get_requested_partitions(inputs) == {night}
        assert due.total_requested == 1, "nothing downstream before the split has landed"

        defs.resolve_job_def("shard_split").execute_in_process(partition_key=night, instance=instance)
        split = tick(16, due.cursor)
        assert {(k.keys_by_dimension["night"], k.keys_by_dimension["shard"])
                for k in split.get_requested_partitions(derived)} == {(night, k) for k in keys}
        assert split.get_num_requested(merged) == 0

        for shard in keys[:-1]:
            defs.resolve_job_def("shard_derive").execute_in_process(
                partition_key=dg.MultiPartitionKey({"night": night, "shard": shard}), instance=instance)
        partial = tick(17, split.cursor)
        assert partial.get_num_requested(merged) == 0, "the merge waits for every shard"
        defs.resolve_job_def("shard_derive").execute_in_process(
            partition_key=dg.MultiPartitionKey({"night": night, "shard": keys[-1]}), instance=instance)
        assert tick(18, partial.cursor).get_requested_partitions(merged) == {night}


def test_every_shard_derives_with_the_settings_of_the_split(fleet):
    """A worker's own settings may differ from the home's (another host, another file): the split passes
    the night's settings on with each shard's input, and the shards derive with them."""
    work, full = fleet
    home = Home.from_env(work / "settings").ensure()
    shutil.copyfile(full.store, home.store)
    root, key = shards.ShardRoot(str(work / "settings-root")), NIGHT.isoformat()
    with store.connect(home.store) as conn:
        shards.split(conn, root, key, 2, CurationConfig(max_idle_days=365))
    for shard in shards.shard_keys(2):
        shards.derive(root, key, 2, shard, CurationConfig())  # the worker's defaults
    with store.connect(home.store) as conn:
        shards.merge(conn, root, key, 2)
        assert conn.execute("select settings::json->>'$.max_idle_days' from core.audit_settings").fetchall() == [("365",)]
    with store.connect(home.store) as conn:  # a split without settings leaves the workers' own
        shards.split(conn, root, key, 2)
    assert not root.exists(f"{root.folder(key, 2, shards.shard_keys(2)[0])}/{shards.SETTINGS}")


def test_a_shard_asks_the_chat_judge_at_the_workers_url_where_the_split_masked_it(fleet, monkeypatch):
    """The split writes the settings as a night records them (a query's values masked: no key in the
    shards' folder); a worker whose settings hold the endpoint derives with it whole, another refuses."""
    from memcurator.config import SettingsError

    work, full = fleet
    home = Home.from_env(work / "judge").ensure()
    shutil.copyfile(full.store, home.store)
    root, key = shards.ShardRoot(str(work / "judge-root")), NIGHT.isoformat()
    endpoint = "https://judge.example/v1?api-key=s3cret"
    with store.connect(home.store) as conn:
        shards.split(conn, root, key, 2, CurationConfig(judge_endpoint=endpoint))
    shard = shards.shard_keys(2)[0]
    assert b"s3cret" not in (work / "judge-root").joinpath(root.folder(key, 2, shard), shards.SETTINGS).read_bytes()
    with pytest.raises(SettingsError, match="query values the store does not keep"):
        shards.derive(root, key, 2, shard, CurationConfig())

    class Asked(Exception):
        pass

    def stand_in(conn, as_of, cfg):  # stops the shard where it derives, with the settings it derives with
        raise Asked(cfg.judge_endpoint)

    monkeypatch.setattr(night, "derive_night", stand_in)
    with pytest.raises(Asked) as asked:
        shards.derive(root, key, 2, shard, CurationConfig(judge_endpoint=endpoint))
    assert asked.value.args == (endpoint,)
