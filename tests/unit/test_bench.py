"""The benchmark harness: a small run end to end, and medians over repeated runs."""

from __future__ import annotations

from datetime import timedelta

import orjson
import polars as pl
from typer.testing import CliRunner

from memcurator import bench, rederive, store
from memcurator.cli import app
from memcurator.config import CurationConfig
from memcurator.home import Home


def test_a_small_bench_times_every_night_and_keeps_the_store_when_asked(tmp_path):
    """One run of the command through every option a bench run has (a full night, three churn nights, the Dagster
    job's night, a night with no new file, the profile, the store kept): two runs, one by option, took twice
    as long, mostly the start-up of their processes."""
    out = tmp_path / "bench-1000.json"
    invoked = CliRunner().invoke(app, ["bench", "--entries", "1000", "--namespaces", "10", "--churn", "0.02",
                                       "--churn-nights", "3", "--baseline-entries", "300", "--job-night", "--profile",
                                       "--workdir", str(tmp_path / "w"), "--keep", "--out", str(out)])
    assert invoked.exit_code == 0, invoked.output
    result = orjson.loads(out.read_bytes())
    fleet = tmp_path / "w" / "fleet"
    names = [s["name"] for s in result["stages"]]
    assert names[0] == "ingest" and "core.near_duplicate_pairs" in names and names[-2:] == ["mart.store_health", bench.CLOSE]
    assert result["near_duplicates"]["recall"] >= 0.95
    churn = result["churn"]
    assert churn["writes"] == 20 and 0 < churn["ratio_to_full"]
    with store.connect(fleet / "store.duckdb", read_only=True) as conn:
        # the store as the last night left it: the fleet, then half of each share of writes new entries (the
        # three churn nights and the job's night), the other half new versions
        assert conn.execute("select count(*) from core.entries").fetchone()[0] == 1_000 + 4 * 10
        assert conn.execute("select count(*) filter (where version_count > 1) from core.entries").fetchone()[0] >= 10
        # the fleet's recalls and checks went in whole, and the entries recalled count as used
        assert conn.execute("select count(*) from raw.quarantine").fetchone()[0] == 0
        assert conn.execute("select count(distinct event_id) from core.recall_results").fetchone()[0] == (
            round(1_000 * bench.RECALLS_PER_WRITE) + round(20 * bench.RECALLS_PER_WRITE) * 4)
        assert conn.execute("select count(*) from core.checks where error_class is distinct from 'assertion'").fetchone()[0] == (
            round(1_000 * bench.CHECKS_PER_WRITE) + round(20 * bench.CHECKS_PER_WRITE) * 4)
        assert conn.execute("select count(*) from core.entry_usage where recall_count > 0").fetchone()[0] > 200
        # the corrections conflict with what they correct: named, shown by a failing check, or found
        kinds = dict(conn.execute("select kind, count(*) from core.contradictions group by kind").fetchall())
        assert set(kinds) == {"explicit", "failed_check", "detected"} and min(kinds.values()) > 5
        assert conn.execute("select count(*) from core.entry_lifecycle where state = 'superseded'").fetchone()[0] > 20
        # a compaction of the store the last churn night left is timed apart (what a compacting night adds), and
        # no churn night's close compacted (the full night's close started the count a day before)
        assert conn.execute("select list(reason order by as_of) from work.compactions").fetchone()[0] == [
            "first_night", "forced"]
        # each night derived for its own date: the full night's, three churn nights, the job's night and, the
        # last, the night with no new file
        assert conn.execute("select min(as_of), max(as_of) from work.refreshes").fetchone() == (
            (bench.START + timedelta(days=bench.DAYS + 1 + 2 + 3),) * 2)
    assert churn["compaction_s"] > 0
    assert set(result["conflicts"]) == {"explicit", "failed_check", "detected", "supersede_links", "superseded",
                                        "contested"} and result["conflicts"]["detected"] > 0  # as the full night left them
    # every stage timed again (that the night reuses work is tested in test_nearindex, not by a clock)
    assert [s["name"] for s in churn["stages"]] == names
    # each stage's kernel time is part of its CPU time (the stages of both nights: the full night's ingest
    # alone copies a file's pages into the process and builds its tables in new memory)
    for stage in result["stages"] + churn["stages"]:
        assert 0 <= stage["sys_s"] <= stage["cpu_s"] + 0.01, stage
    assert sum(s["sys_s"] for s in result["stages"]) > 0
    # --churn-nights: each night's share of the full night, their median and mean
    series = churn["series"]
    assert [row["night"] for row in series["nights"]] == [1, 2, 3]
    assert [row["compaction"] for row in series["nights"]] == [None] * 3
    walls = sorted(row["derivation_wall_s"] for row in series["nights"])
    for row in series["nights"]:  # each night's stages, the close among them, the ingest beside the derivation
        assert list(row["stages"]) == ["ingest", *(name for name, _ in bench.STEPS), bench.CLOSE]
        assert row["stages"][bench.CLOSE] == row["close_s"]
        assert abs(sum(row["stages"].values()) - row["stages"]["ingest"] - row["derivation_wall_s"]) < 0.01
    assert series["median_wall_s"] == walls[1] > 0 and walls[0] <= series["mean_ratio"] * (
        result["derivation_wall_s"]) <= walls[2] + 0.001
    # the night after, through the Dagster job: every kind of step ran and took time
    job = churn["job_night"]
    assert job["success"] and set(job["by_kind"]) == {"ingest", "tables", "checks", "publish"}
    assert all(seconds > 0 for seconds in job["by_kind"].values()) and "mart__recall_view" in job["steps"]
    assert job["wall_s"] >= sum(job["by_kind"].values()) * 0.9
    assert job["peak_rss_mb"] > 0  # the job's own process (spawned), as a nightly run starts
    # the nights before published their snapshots: the job's publish clones the store's file where the
    # filesystem of the bench's folder shares blocks, else writes over the older snapshot what differs
    assert job["published_by"] in ("clone", "delta")
    size_mb = (fleet / "store.duckdb").stat().st_size / 1e6
    assert job["published_mb"] == 0 if job["published_by"] == "clone" else 0 < job["published_mb"] <= size_mb
    assert result["derivation_peak_rss_mb"] > 0 and result["ingest_peak_rss_mb"] > 0
    assert result["peak_source"] == bench.PEAK_SOURCE
    assert result["kernel_warmup_s"] > 0  # the compiled kernels made ready before the timed nights
    assert result["commit"] == bench.code_commit() != "unknown"  # the code measured (a git checkout here)
    # each stage carries its process's high-water mark so far: rising stage by stage, up to the night's peak
    peaks = [s["peak_rss_mb"] for s in result["stages"][1:]]
    assert peaks == sorted(peaks) and 0 < peaks[-1] <= result["derivation_peak_rss_mb"]  # closing the store comes after
    # the day after, a night with no new file: every stage timed again, its tables derived for that night; its
    # input, the events of the files before dated in its day
    quiet = churn["quiet_night"]
    assert [s["name"] for s in quiet["stages"]] == names and quiet["derivation_wall_s"] > 0
    assert 0 <= quiet["events"] < 20
    assert quiet["ratio_to_full"] == round(quiet["derivation_wall_s"] / result["derivation_wall_s"], 3)
    # each night's DuckDB statements, per stage and the slowest, the comments left out of their text
    for statements in (result["statements"], churn["statements"], quiet["statements"]):
        assert set(statements["stages"]) == {name for name, _ in bench.STEPS}
        assert all(v["count"] > 0 for v in statements["stages"].values())
        seconds = [x["seconds"] for x in statements["slowest"]]
        assert len(seconds) == bench.STATEMENTS_SHOWN and seconds == sorted(seconds, reverse=True)
        assert sum(v["seconds"] for v in statements["stages"].values()) >= sum(seconds) > 0
        assert not any("--" in x["statement"] for x in statements["slowest"])
    # --profile: the first churn night derived again on a copy of the store before it, the copy removed after
    profiled = churn["profile"]
    assert profiled["statements"] > 500 and "core.entry_lifecycle" in {s["name"] for s in profiled["stages"]}
    assert not (fleet / "before-churn").exists()
    report = tmp_path / "performance.md"
    assert CliRunner().invoke(app, ["bench-report", str(out), "--out", str(report)]).exit_code == 0
    text = report.read_text()
    assert "--churn 0.02 --churn-nights 3 --job-night --profile --out" in text and "3 churn nights one after the other" in text
    assert "; no close compacted)" in text
    assert "derived again with DuckDB's profile of each statement" in text
    # after a full night, churn nights, a compaction and a night of the Dagster job: the full derivation's tables
    assert rederive.rederive_check(fleet / "store.duckdb").identical


def _run(derivation: float, speedup: float, ratio: float, rss: float) -> dict:
    return {"entries": 10, "namespaces": 1, "words": 60, "derivation_wall_s": derivation, "ingest_wall_s": derivation / 2,
            "ingest_peak_rss_mb": rss / 2, "derivation_peak_rss_mb": rss, "stages": [{"name": "ingest", "wall_s": derivation}],
            "near_duplicates": {"entries_per_s": speedup * 10, "recall": 1.0},
            "baseline": {"entries_per_s": 10, "recall": 0.8}, "near_duplicate_speedup": speedup,
            "churn": {"share": 0.01, "ratio_to_full": ratio, "derivation_wall_s": derivation * ratio, "stages": []},
            "recalls": 3, "checks": 1}


def test_repeated_runs_report_medians_and_the_largest_peak():
    combined = bench.combine([_run(10, 12, 0.5, 900), _run(30, 20, 0.1, 1_000), _run(20, 15, 0.3, 800)])
    assert combined["repeats"] == 3 and combined["derivation_runs_s"] == [10, 30, 20]
    assert combined["derivation_wall_s"] == 20 and combined["near_duplicate_speedup"] == 15
    assert combined["churn"]["ratio_to_full"] == 0.3
    assert combined["derivation_peak_rss_mb"] == 1_000 and combined["ingest_peak_rss_mb"] == 500
    assert combined["stages"][0]["wall_s"] == 20, "stage rows come from the median run"
    assert bench.combine([_run(5, 1, 1, 1)])["repeats"] == 1
    # the Dagster job night: the median wall time, each run's beside it, and the largest peak
    nights = [_run(d, 12, 0.5, 900) for d in (10, 30, 20)]
    for run, (wall, peak) in zip(nights, ((40.0, 3_000), (35.0, 3_300), (38.0, 2_900))):
        run["churn"]["job_night"] = {"wall_s": wall, "by_kind": {"tables": wall / 2}, "peak_rss_mb": peak}
    job = bench.combine(nights)["churn"]["job_night"]
    assert job["wall_s"] == 38.0 and job["wall_runs"] == [40.0, 35.0, 38.0] and job["peak_rss_mb"] == 3_300
    reported = bench.combine(nights) | {"entries": 1_000_000, "stages": [
        {"name": "core.entries", "wall_s": 20, "cpu_s": 20, "rss_mb": 900, "entries_per_s": 50_000}]}
    assert "the job's process peaked at 3.2 GB (the largest of the runs)" in bench.markdown(
        [reported], ["memcurator bench"], "plot.svg")
    del nights[0]["churn"]["job_night"]["peak_rss_mb"]  # a run recorded without it: no peak claimed
    assert "peak_rss_mb" not in bench.combine(nights)["churn"]["job_night"]
    # the night with no new file: the median, each run's ratio beside it; left out when a run has none
    for run, share in zip(nights, (0.06, 0.04, 0.05)):
        run["churn"]["quiet_night"] = {"derivation_wall_s": run["derivation_wall_s"] * share, "ratio_to_full": share,
                                       "stages": []}
    quiet = bench.combine(nights)["churn"]["quiet_night"]
    assert quiet["derivation_wall_s"] == 1.0 and quiet["ratio_to_full"] == 0.05
    assert quiet["ratio_runs"] == [0.06, 0.04, 0.05]
    del nights[1]["churn"]["quiet_night"]
    assert "quiet_night" not in bench.combine(nights)["churn"]
    # a series of churn nights: the medians of the runs' medians and means, each run's median beside
    for run, (middle, mean) in zip(nights, ((0.16, 0.18), (0.14, 0.15), (0.15, 0.17))):
        run["churn"]["series"] = {"nights": [{"night": 1, "ratio_to_full": middle, "compaction": None},
                                             {"night": 2, "ratio_to_full": middle, "compaction": "deleted_rows"},
                                             {"night": 3, "ratio_to_full": middle, "compaction": "interval"}],
                                  "median_wall_s": middle * run["derivation_wall_s"], "median_ratio": middle,
                                  "mean_ratio": mean}
    series = bench.combine(nights)["churn"]["series"]
    assert series["median_ratio"] == 0.15 and series["mean_ratio"] == 0.17 and series["median_wall_s"] == 3.0
    assert series["median_ratio_runs"] == [0.16, 0.14, 0.15]
    reported = bench.combine(nights) | {"entries": 1_000_000, "stages": []}
    assert ("the close wrote tables again alone on night 2; the close merged the store on night 3)"
            in bench.markdown([reported], ["memcurator bench"], "plot.svg"))
    del nights[2]["churn"]["series"]
    assert "series" not in bench.combine(nights)["churn"]


def test_the_targets_are_read_at_a_million_entries_and_a_larger_run_is_documented_beside():
    def sized(entries: int, derivation: float, ratio: float) -> dict:
        run = _run(derivation, 40, ratio, 3_000) | {"entries": entries, "namespaces": entries // 100}
        run["stages"] = [{"name": "core.entries", "wall_s": derivation, "cpu_s": derivation, "rss_mb": 3_000,
                          "entries_per_s": entries / derivation}]
        return run

    text = bench.markdown([sized(10_000_000, 900, 0.5), sized(1_000_000, 50, 0.08)], ["memcurator bench"], "plot.svg")
    assert "derivation <= 60 s: 50.0 s (runs: 50.0) at 1,000,000 entries (met)" in text
    assert "churn night <= 10 % of a full night: 8.0% (runs: 8.0%) at 1,000,000 entries (met)" in text
    repeated = bench.combine([sized(1_000_000, d, r) for d, r in ((61, 0.11), (58, 0.09), (59.5, 0.097))])
    medians = bench.markdown([repeated], ["memcurator bench"], "plot.svg")  # each run's figure beside the median
    assert "derivation <= 60 s: 59.5 s (runs: 61.0, 58.0, 59.5) at 1,000,000 entries (met)" in medians
    assert "churn night <= 10 % of a full night: 9.7% (runs: 11.0%, 9.0%, 9.7%) at 1,000,000 entries (met)" in medians
    assert ("Stages at 10,000,000 entries (a documented run, not in CI; 1 run), against 1,000,000: "
            "10x the entries took 18.0x the derivation time and 1.0x the peak RSS.") in text
    assert "| core.entries | 900.00 | 900.00 | 3,000 | - | 18.0 |" in text  # no high-water mark recorded: -
    assert text.index("| 1,000,000 |") < text.index("| 10,000,000 |"), "sizes in ascending order"
    # a run recorded before the fleet recalled and checked is marked, and so is a larger run's heading
    assert "†" not in text
    writes_only = {k: v for k, v in sized(10_000_000, 900, 0.5).items() if k not in ("recalls", "checks")}
    marked = bench.markdown([writes_only, sized(1_000_000, 50, 0.08)], ["memcurator bench"], "plot.svg")
    assert "| 10,000,000† |" in marked and "| 1,000,000 |" in marked and "† A fleet of writes alone" in marked
    assert "(a documented run, not in CI; 1 run; a fleet of writes alone), against 1,000,000" in marked
    # a run recorded before the fleet corrected itself is marked too; a run since counts the conflicts it held
    assert "| -‡ |" in text and "‡ A fleet without corrections" in text
    held = {"explicit": 1_200, "failed_check": 300, "detected": 45_000, "supersede_links": 1_500, "superseded": 1_400,
            "contested": 60_000}
    corrected = bench.markdown([sized(1_000_000, 50, 0.08) | {"conflicts": held}], ["memcurator bench"], "plot.svg")
    assert "| 1,200 / 300 / 45,000 |" in corrected and "‡" not in corrected
    # runs that read ru_maxrss (before VmHWM) carry a mark and the note on what it inherits
    assert "| 3,000\\* | 1,500\\* |" in text and "inherits from its parent" in text
    current = [sized(1_000_000, 50, 0.08) | {"peak_source": bench.PEAK_SOURCE}]
    assert "inherits from its parent" not in bench.markdown(current, ["memcurator bench"], "plot.svg")
    # each run names the code it measured; a larger run on other code says its ratios mix in the changes
    assert "Measured on other code, not recorded against not recorded" not in text  # neither recorded: same
    mixed = bench.markdown([sized(10_000_000, 900, 0.5) | {"commit": "aaa1111"},
                            sized(1_000_000, 50, 0.08) | {"commit": "bbb2222"}], ["memcurator bench"], "plot.svg")
    assert "(Measured on other code, aaa1111 against bbb2222: the ratios mix the growth with the changes between.)" in mixed
    assert mixed.count("| bbb2222 |") == 1 and mixed.count("| aaa1111 |") == 1
    # a run's note on its conditions follows its stages' heading
    noted = bench.markdown([sized(10_000_000, 900, 0.5) | {"note": "Other work ran beside it."},
                            sized(1_000_000, 50, 0.08) | {"note": "A quiet machine."}], ["memcurator bench"], "plot.svg")
    assert "and 1.0x the peak RSS. Other work ran beside it.\n" in noted
    assert "\nA quiet machine.\n\nStages at 1,000,000 entries" in noted
    # the churn night's statements, where a run recorded them: per stage, and the slowest
    counted = sized(1_000_000, 50, 0.08)
    counted["churn"] |= {"stages": [{"name": "core.entries", "wall_s": 4.0}], "statements": {
        "stages": {"core.entries": {"count": 40, "seconds": 3.5}},
        "slowest": [{"stage": "core.entries", "seconds": 1.25, "statement": "insert into core.entries select 1"}]}}
    shown = bench.markdown([counted], ["memcurator bench"], "plot.svg")
    assert "| core.entries | 50.00 | 4.00 | 40 | 3.50 |" in shown
    assert "statements: 40, 3.50 s of its 4.00 s" in shown and "- 1.250 s, core.entries: `insert into core.entries select 1`" in shown
    # the night with no new file, where a run timed it: its share and its stages beside the churn night's
    counted["churn"]["quiet_night"] = {"derivation_wall_s": 2.5, "ratio_to_full": 0.05, "events": 12,
                                       "stages": [{"name": "core.entries", "wall_s": 0.75}]}
    quiet = bench.markdown([counted], ["memcurator bench"], "plot.svg")
    assert "| core.entries | 50.00 | 4.00 | 40 | 3.50 | 0.75 |" in quiet
    assert ("a night with no new file, the day after, took 2.5 s = 5.0% of the full night (runs: 5.0%): its only "
            "input the 12 events of earlier files dated in its day") in quiet
    uncounted = sized(1_000_000, 50, 0.08)  # a run recorded before: the stages' times alone
    uncounted["churn"] |= {"stages": [{"name": "core.entries", "wall_s": 4.0}]}
    assert "| core.entries | 50.00 | 4.00 |\n" in bench.markdown([uncounted], ["memcurator bench"], "plot.svg")


def _own_peak() -> float:  # module level: the spawned process imports it by name
    return bench._peak_mb()


def test_a_spawned_process_reports_its_own_peak_not_its_parents():
    ballast = bytearray(512 * 2**20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touch every page: the parent's peak is now >= 512 MB
    assert bench.in_fresh_process(_own_peak) < 400
    del ballast


def _loaded_after(modules: list[str]) -> list[bool]:  # module level, as _own_peak
    import sys

    before = [name in sys.modules for name in modules]
    bench._import_all(modules)
    return before + [name in sys.modules for name in modules]


def test_the_derivation_starts_with_the_modules_the_ingest_loaded(tmp_path):
    # a nightly run derives in the process that ingested: what the ingest imported (pandas, which DuckDB
    # imports for a statement's parameters) is not the derivation's to time
    home = Home.from_env(tmp_path / "fleet").ensure()
    bench.land(bench.generate(200, 4, seed=5), home.landing, "fleet.jsonl")
    ingested = bench.in_fresh_process(bench._timed_ingest, home.store, home.landing, CurationConfig(), 200)
    assert "pandas" in ingested["modules"]
    # a fresh process has not imported it; given the ingest's list it has, and a name it cannot import is passed over
    assert bench.in_fresh_process(_loaded_after, ["pandas", "memcurator_no_such_module"]) == [False, False, True, False]


def test_a_churn_night_brings_as_many_new_entries_as_new_versions_of_old_ones():
    from datetime import datetime, timedelta

    import polars as pl

    fleet = bench.generate(400, 4, words=20, seed=3)
    day = datetime(2026, 11, 1)
    churn = bench.churn_writes(fleet, 41, 4, 20, seed=4, day=day, id_prefix="c").frame
    assert churn.columns == fleet.frame.columns and churn.height == 41
    new, changed = churn.filter(churn["entry_id"].str.starts_with("c")), churn.filter(churn["entry_id"].str.starts_with("b"))
    assert (new.height, changed.height) == (21, 20) and changed["entry_id"].n_unique() == 20
    # a new version: the entry's namespace, written during the day, a part of its words replaced
    before = fleet.frame.join(changed, on="entry_id", suffix="_new")
    assert before.height == 20 and (before["namespace"] == before["namespace_new"]).all()
    assert ((before["ts_new"] >= day) & (before["ts_new"] < day + timedelta(days=1))).all()
    replaced = [sum(x != y for x, y in zip(a.split(), b.split())) for a, b in zip(before["text"], before["text_new"])]
    assert all(len(b.split()) == 20 for b in before["text_new"])
    assert 0 < sum(replaced) < 20 * 20 * 0.35 and max(replaced) < 20
    # the new entries are written during the day too (they were dated over the fleet's 60 days, so a churn
    # night's events fell on every day of the store's history), in the order they were generated in: a
    # correction after what it corrects
    assert ((new["ts"] >= day) & (new["ts"] < day + timedelta(days=1))).all()
    generated = bench.generate(21, 4, 20, seed=4, id_prefix="c", used=False).frame
    assert new["entry_id"].to_list() == generated["entry_id"].to_list() and new["ts"].is_sorted()
    dated = dict(zip(new["entry_id"], new["ts"]))
    corrections = new.filter(pl.col("corrects").is_not_null())
    assert corrections.height and all(dated[c] <= t for c, t in zip(corrections["corrects"], corrections["ts"]))
    # seeded: the same call gives the same writes
    assert churn.equals(bench.churn_writes(fleet, 41, 4, 20, seed=4, day=day, id_prefix="c").frame)


def test_a_large_fleet_lands_as_several_files_that_ingest_as_one(tmp_path):
    fleet = bench.generate(250, 5, words=8, seed=4, corrected_share=0.0)  # (corrections land in files of their own)
    whole = bench.land(fleet, tmp_path / "one", "fleet.jsonl")
    parts = bench.land(fleet, tmp_path / "parts", "fleet.jsonl", part_events=100)
    usage = ["fleet-recalls.jsonl", "fleet-checks.jsonl", "fleet-failed-checks.jsonl"]
    assert [p.name for p in whole] == ["fleet.jsonl", *usage]
    assert [p.name for p in parts] == ["fleet-001.jsonl", "fleet-002.jsonl", "fleet-003.jsonl", *usage]
    assert [len(p.read_text().splitlines()) for p in parts[:3]] == [100, 100, 50]
    assert "".join(p.read_text() for p in parts[:3]) == whole[0].read_text()
    assert [len(p.read_text().splitlines()) for p in whole[1:]] == [
        fleet.recalls.height, fleet.checks.filter(fleet.checks["status"] == "pass").height,
        fleet.checks.filter(fleet.checks["status"] == "fail").height]


def test_the_ingest_bench_lands_the_same_events_in_few_files_and_in_many(tmp_path):
    out = tmp_path / "ingest-files.json"
    args = ["bench-ingest", "--entries", "300", "--part-events", "40", "--repeat", "1",
            "--workdir", str(tmp_path / "work"), "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    result = orjson.loads(out.read_bytes())
    by_kind, small = result["layouts"]["by_kind"], result["layouts"]["small_files"]
    fleet = bench.generate(300, 3, 60, 1)
    events = fleet.frame.height + fleet.recalls.height + fleet.checks.height
    assert by_kind["events"] == small["events"] == events  # every event of either layout ingested
    assert by_kind["files"] == 7 and small["files"] >= events // 40
    # the lake: a file for each day of events, however they landed
    days = pl.concat([f["ts"].dt.date() for f in (fleet.frame, fleet.recalls, fleet.checks)]).n_unique()
    assert by_kind["lake_files"] == small["lake_files"] == days
    assert result["ms_per_file"] == round(1000 * (small["wall_s"] - by_kind["wall_s"]) / (small["files"] - 7), 2)
    assert not (tmp_path / "work").exists()
    bench_run = tmp_path / "bench-10.json"
    sized = _run(10.0, 30.0, 0.1, 100.0)
    sized["stages"] = [{"name": "core.entries", "wall_s": 10.0, "cpu_s": 10.0, "rss_mb": 100, "entries_per_s": 1.0}]
    bench_run.write_bytes(orjson.dumps(sized))
    report = tmp_path / "performance.md"
    out.write_bytes(orjson.dumps(result | {"note": "Measured before at abc1234."}))  # a note kept with the file
    invoked = CliRunner().invoke(app, ["bench-report", str(bench_run), "--ingest", str(out), "--out", str(report)])
    assert invoked.exit_code == 0, invoked.output
    text = report.read_text()
    assert "beside its events. Measured before at abc1234." in text
    assert f"Landed in files of 40 events, as a fleet whose runs each land a transcript, {small['files']:,} files" in text
    assert f"memcurator bench-ingest --entries 300 --part-events 40 --repeat 1 --out {out}" in text


def test_the_fleet_corrects_some_of_what_it_wrote_as_the_demo_does(tmp_path):
    import polars as pl

    fleet = bench.generate(20_000, 20, words=30, seed=2)
    frame = fleet.frame
    fixes = frame.filter(pl.col("corrects").is_not_null())
    # a correction restates the first entry of its group, written before it, in its namespace, negated
    assert abs(fixes.height / frame.height - bench.CORRECTED_SHARE) < 0.01
    assert abs(fixes["supersedes"].is_not_null().mean() - bench.CORRECTIONS_LINKED) < 0.05
    assert frame.filter(pl.col("supersedes").is_not_null() & (pl.col("supersedes") != pl.col("corrects"))).is_empty()
    first = frame.group_by("group").agg(pl.col("entry_id").min().alias("first"))
    corrected = fixes.join(first, on="group").join(frame, left_on="corrects", right_on="entry_id", suffix="_old")
    assert corrected.height == fixes.height and (corrected["corrects"] == corrected["first"]).all()
    assert (corrected["namespace"] == corrected["namespace_old"]).all() and (corrected["ts_old"] < corrected["ts"]).all()
    negated = lambda texts: texts.str.split(" ").list.contains(bench.NEGATION)  # noqa: E731
    assert negated(corrected["text"]).all() and not negated(corrected["text_old"]).any()
    # a failing assertion check on the entry corrected for some, 30 s after, half naming the correction
    checks = fleet.checks.filter(pl.col("error_class") == "assertion").join(
        fixes.select(pl.col("corrects").alias("entry_id"), pl.col("entry_id").alias("fix"), pl.col("ts").alias("fixed")),
        on="entry_id")
    shares = (checks.group_by("id").len().height / fixes.height, checks["corrected_by"].is_not_null().mean())
    assert abs(shares[0] - bench.CORRECTIONS_CHECKED) < 0.05 and abs(shares[1] - bench.CHECKS_NAME_CORRECTION) < 0.1
    named = checks.filter(pl.col("corrected_by").is_not_null())
    assert named.filter(pl.col("corrected_by") == pl.col("fix")).select("id").n_unique() == named.select("id").n_unique()
    assert checks.filter(pl.col("ts") == pl.col("fixed") + pl.duration(seconds=30)).select("id").n_unique() == (
        checks.select("id").n_unique())
    # drawn apart: without corrections, the fleet is the same but for the corrections' words
    plain = bench.generate(20_000, 20, words=30, seed=2, corrected_share=0.0)
    assert plain.frame["corrects"].is_null().all() and plain.recalls.equals(fleet.recalls)
    assert plain.frame.drop("text", "corrects", "supersedes").equals(frame.drop("text", "corrects", "supersedes"))
    assert (plain.frame["text"] != frame["text"]).sum() == fixes.height
    # landed, each shape in files of its own, every event goes in
    paths = bench.land(fleet, tmp_path / "landing", "fleet.jsonl")
    assert sorted(p.name for p in paths) == sorted(f"fleet{part}.jsonl" for part in (
        "", "-supersedes", "-recalls", "-checks", "-failed-checks", "-failed-assertions", "-corrected-assertions"))
    home = Home.from_env(tmp_path / "home").ensure()
    from memcurator import ingest

    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, tmp_path / "landing", None, CurationConfig())
        assert conn.execute("select count(*) from raw.quarantine").fetchone()[0] == 0
        assert conn.execute("select count(*) from raw.events").fetchone()[0] == (
            frame.height + fleet.recalls.height + fleet.checks.height)


def test_the_fleet_recalls_and_checks_entries_of_their_namespace_written_before():
    import polars as pl

    fleet = bench.generate(3_000, 6, words=10, seed=2)
    corrections = fleet.checks.filter(pl.col("error_class") == "assertion")  # test_the_fleet_corrects_...
    fleet.checks = fleet.checks.filter(pl.col("error_class").is_null() | (pl.col("error_class") == "transient"))
    assert fleet.recalls.height == 1_000 and fleet.checks.height == 250 and corrections.height > 0
    written = fleet.frame.select("namespace", "entry_id", pl.col("ts").alias("written"))
    results = fleet.recalls.explode("results").unnest("results")
    recalled = results.join(written, on="entry_id", suffix="_entry")
    assert recalled.height == results.height
    assert (recalled["namespace"] == recalled["namespace_entry"]).all()
    assert (recalled["written"] <= recalled["ts"]).all()
    # 1-5 distinct entries a recall, ranked from 1, the first three injected
    per_recall = results.group_by("id").agg(pl.len(), pl.col("entry_id").n_unique().alias("distinct"),
                                            pl.col("rank").sort().alias("ranks"))
    assert per_recall["len"].min() == 1 and per_recall["len"].max() == 5
    assert (per_recall["len"] == per_recall["distinct"]).all()
    assert all(ranks == list(range(1, len(ranks) + 1)) for ranks in per_recall["ranks"].to_list())
    assert (results["injected"] == (results["rank"] <= 3)).all()
    # each among the last RECALLED_FROM entries of its namespace by then
    order = written.sort("namespace", "written", "entry_id").with_columns(
        pl.int_range(pl.len()).over("namespace").alias("position"))
    newest = (fleet.recalls.join_where(order, pl.col("namespace") == pl.col("namespace_right"),
                                       pl.col("written") <= pl.col("ts"))
              .group_by("id").agg(pl.col("position").max().alias("newest")))
    placed = results.join(order, on="entry_id").join(newest, on="id")
    assert (placed["position"] > placed["newest"] - bench.RECALLED_FROM).all()
    checked = fleet.checks.join(written, on="entry_id", suffix="_entry")
    assert checked.height == 250 and (checked["namespace"] == checked["namespace_entry"]).all()
    assert (checked["written"] <= checked["ts"]).all()
    assert 0 < (fleet.checks["status"] == "fail").sum() < 0.3 * 250
    # seeded; the writes are those of a fleet without them
    again = bench.generate(3_000, 6, words=10, seed=2)
    assert again.recalls.equals(fleet.recalls) and again.checks.equals(pl.concat([fleet.checks, corrections]))
    assert bench.generate(3_000, 6, words=10, seed=2, used=False).frame.equals(fleet.frame)



def test_the_commit_measured_counts_changes_to_the_code_not_to_the_docs_a_bench_writes(tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "docs" / "bench").mkdir(parents=True)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs" / "bench" / "bench-10.json").write_text("{}")
    (tmp_path / "pkg" / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    head = bench.code_commit(tmp_path)
    assert head != "unknown" and not head.endswith("+changes")
    (tmp_path / "docs" / "bench" / "bench-10.json").write_text('{"run": 1}')  # a run file written mid-bench
    assert bench.code_commit(tmp_path) == head
    (tmp_path / "pkg" / "code.py").write_text("x = 2\n")
    assert bench.code_commit(tmp_path) == head + "+changes"


def test_the_warm_up_nights_go_through_every_compiled_kernel_a_bench_night_calls(tmp_path):
    warmed = bench.warm_kernels(tmp_path / "warm")
    assert warmed["wall_s"] > 0
    assert {"ascii_word_codes", "min_hashes", "band_keys", "band_bucket_pairs", "stamped_jaccard", "row_sums",
            "judge_token_codes", "judge_lists"} <= set(warmed["kernels"])


def test_a_stashed_fleet_comes_back_as_it_was(tmp_path):
    # the timed nights run with the fleet on disk (bench.stash), not in the generator's memory
    fleet = bench.generate(300, 3, words=12, seed=6)
    back = bench.unstash(bench.stash(fleet, tmp_path / "fleet"))
    assert len(fleet.truth) > 5 and back.truth == fleet.truth
    assert back.frame.equals(fleet.frame) and back.frame.schema == fleet.frame.schema
    assert back.recalls.height > 0 and back.recalls.equals(fleet.recalls) and back.checks.equals(fleet.checks)
    assert bench.unstash(bench.stash(bench.Fleet(fleet.frame.clear()), tmp_path / "empty")).truth == set()


def test_a_fleet_too_small_to_be_recalled_has_no_recalls():
    # one entry: no recall drawn (its results were an empty column polars could not type)
    fleet = bench.generate(1, 1, words=8, seed=2)
    assert fleet.frame.height == 1 and fleet.recalls.height == 0
