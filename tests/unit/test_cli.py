"""The command line says what is wrong with a date, a dataset or a file it is given, before it does anything."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from memcurator.cli import app
from memcurator.entries import FIRST_NIGHT, buildable_night
from memcurator.home import Home
from pipelines.partitions import nightly_partitions


def _said(result) -> str:
    # the console wraps its lines at the terminal's width, in a panel's borders
    return " ".join(result.output.replace("│", " ").split())


def test_a_night_is_buildable_from_the_first_partition_to_the_day_before_today():
    today = date(2026, 12, 6)
    assert buildable_night("2026-12-05", today) == date(2026, 12, 5)
    assert buildable_night(FIRST_NIGHT.isoformat(), today) == FIRST_NIGHT
    with pytest.raises(ValueError, match="once its day is over.*latest now is 2026-12-05"):
        buildable_night("2026-12-06", today)
    with pytest.raises(ValueError, match="first night the job builds is 2024-01-01"):
        buildable_night("2023-12-31", today)
    with pytest.raises(ValueError, match="'12/05/2026' is not a date"):
        buildable_night("12/05/2026", today)
    # the same nights as the job's partitions
    now = datetime.now(timezone.utc)
    keys = nightly_partitions.get_partition_keys(current_time=now)
    assert (keys[0], keys[-1]) == (FIRST_NIGHT.isoformat(), (now.date() - timedelta(days=1)).isoformat())


@pytest.mark.parametrize("night, said", [
    ("tomorrow", "'tomorrow' is not a date"),
    ((date.today() + timedelta(days=2)).isoformat(), "a night is built once its day is over"),
    ("2020-01-01", "the first night the job builds is 2024-01-01"),
])
def test_run_says_why_it_cannot_build_a_night_and_touches_nothing(tmp_path, night, said):
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["run", "--night", night, "--home", str(home)])
    assert result.exit_code == 2 and said in _said(result) and "Traceback" not in result.output, result.output
    assert not home.exists()


def test_demo_says_why_it_cannot_end_on_a_day_not_over_and_lands_nothing(tmp_path):
    home = tmp_path / "home"
    later = (date.today() + timedelta(days=30)).isoformat()
    result = CliRunner().invoke(app, ["demo", "--end", later, "--writes", "50", "--home", str(home)])
    assert result.exit_code == 2 and "--end" in _said(result) and "once its day is over" in _said(result)
    assert not home.exists() or not any(Home.from_env(home).landing.rglob("*"))


@pytest.mark.parametrize("command", [
    ["recall", "deploys", "-n", "team-a", "--as-of", "last week"],
    ["import", "flat", "{path}", "-n", "team-a", "--ts", "noon"],
])
def test_a_time_that_is_not_one_is_a_usage_error(tmp_path, command):
    source = tmp_path / "notes.txt"
    source.write_text("use the staging database for load tests\n")
    args = [a.replace("{path}", str(source)) for a in command] + ["--home", str(tmp_path / "home")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "expected a date, YYYY-MM-DD[THH:MM]" in _said(result), result.output


@pytest.mark.parametrize("command, said", [
    (["eval", "nope"], "unknown dataset 'nope'; known: locomo,"),
    (["eval", "locomo"], "locomo reads its files, such as ../shared/data/locomo/locomo_dev.json.gz"),
    (["eval", "msrp", "{missing}"], "does not exist"),
    (["land", "{missing}"], "does not exist"),
])
def test_a_dataset_or_file_that_is_not_there_is_a_usage_error(tmp_path, command, said):
    home = tmp_path / "home"
    args = [a.replace("{missing}", str(tmp_path / "missing.jsonl")) for a in command]
    result = CliRunner().invoke(app, args, env={"MEMCURATOR_HOME": str(home)})
    assert result.exit_code == 2 and said in _said(result) and "Traceback" not in result.output, result.output
    assert not home.exists()  # nothing landed


@pytest.mark.parametrize("command, said", [
    (["bench", "--entries", "0"], "'--entries': Input should be greater than or equal to 1"),
    (["bench", "--churn", "2"], "'--churn': Input should be less than or equal to 1"),
    (["crash-test", "--kills", "0"], "'--kills': Input should be greater than or equal to 1"),
    # (these stopped with a traceback: a division by zero, a negative LIMIT)
    (["demo", "--namespaces", "0"], "'--namespaces': Input should be greater than or equal to 1"),
    (["demo", "--days", "0"], "'--days': Input should be greater than or equal to 1"),
    (["review", "clusters", "--limit", "-1"], "'--limit': Input should be greater than or equal to 1"),
    (["recall", "deploys", "-n", "team-a", "-k", "0"], "'-k': Input should be greater than or equal to 1"),
])
def test_a_count_or_share_out_of_range_is_a_usage_error(tmp_path, command, said):
    where = ["--workdir", str(tmp_path / "work")] if command[0] in ("bench", "crash-test") else \
        ["--home", str(tmp_path / "work")]
    result = CliRunner().invoke(app, [*command, *where])
    assert result.exit_code == 2 and said in _said(result), result.output
    assert not (tmp_path / "work").exists()


def test_a_conflict_is_resolved_only_by_a_known_action(tmp_path):
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["review", "resolve", "k_1", "explode", "--reason", "r", "--home", str(home)])
    assert result.exit_code == 2 and "'explode': a conflict is resolved by replace, narrow, retire, dismiss" in _said(result)
    assert not home.exists()  # no decision file written


def test_a_command_leaves_its_objects_to_the_end_of_the_process():
    # an exit handler registered before the command line's runs after its own: by then the objects are frozen
    code = ("import atexit, gc\n"
            "atexit.register(lambda: print('frozen' if gc.get_freeze_count() else 'collected'))\n"
            "import memcurator.cli\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "frozen"


def _curated_and_published(home) -> tuple[str, str]:
    """Three paraphrases (one proposal), a held entry and a config's newer value, derived and published; the
    proposal's namespace and id."""
    from memcurator import night, store
    from tests.conftest import write, write_jsonl
    from tests.unit.test_clustering import PARAPHRASES

    write_jsonl(home.landing / "f.jsonl", [
        *(write(t, entry_id=f"p{i}", ts=f"2026-11-2{i}T10:00:00Z", run_id=f"r{i}") for i, t in enumerate(PARAPHRASES[:3])),
        write("the staging cluster is slow today", entry_id="held", ts="2026-11-29T10:00:00Z"),
        # a newer value of a config (ids as long as a fleet's): a supersede suggestion
        write("the ledger timeout is 30 seconds", entry_id="run-0001-ledger-timeout", cls="config",
              ts="2026-11-10T10:00:00Z", data={"tags": ["ledger", "timeout"]}),
        write("ledger timeout: 45 seconds", entry_id="run-0002-ledger-timeout", cls="config",
              ts="2026-11-28T10:00:00Z", data={"tags": ["ledger", "timeout"]})])
    with store.connect(home.store) as conn:
        night.ingest_and_derive(conn, home.landing, datetime(2026, 11, 30))
        (namespace, cluster), = conn.execute("select namespace, cluster_id from core.principle_proposals").fetchall()
    store.publish(home.store, home.published)
    return namespace, cluster


def test_the_curators_read_ids_whole_and_banners_under_their_entry_at_80_columns(home):
    """The status names the night the snapshot holds. At a terminal's 80 columns a proposal's cluster id,
    what `review approve` takes, prints whole on its namespace's line (a table of nine columns broke it over
    three lines), and a recalled entry's banners come after its number and text, not before them, where they
    read as the previous entry's; `show` lists a list an item to a line; a command to copy prints on one line."""
    namespace, cluster = _curated_and_published(home)
    runner = CliRunner()
    status = runner.invoke(app, ["status", "--home", str(home.root)])
    assert status.output.startswith("published: night 2026-11-29 (events and decisions before 2026-11-30 00:00 UTC)\n")
    listed = runner.invoke(app, ["review", "clusters", "--home", str(home.root)], terminal_width=80)
    assert listed.exit_code == 0, listed.output
    assert any(line.startswith(f"{namespace}/{cluster} 3 members") for line in listed.output.splitlines()), listed.output
    recalled = runner.invoke(app, ["recall", "staging cluster slow", "-n", "ns-a", "--home", str(home.root)],
                             terminal_width=80)
    lines = recalled.output.splitlines()
    assert lines[0].startswith(" 1. the staging cluster is slow today"), recalled.output
    assert lines[1].strip() == "! session material: fails durable" and lines[2].strip().startswith("held ·")
    # an entry's history shows a list (its banners) an item to a line, not as a Python list
    shown = runner.invoke(app, ["show", "held", "--home", str(home.root)], terminal_width=80)
    assert "    banners\n      - session material: fails durable\n" in shown.output and "['" not in shown.output
    # a command to copy prints on one line (the console broke it at 80 columns)
    suggested = runner.invoke(app, ["review", "suggestions", "--home", str(home.root)], terminal_width=80)
    assert ("  memcurator review confirm run-0002-ledger-timeout --supersedes run-0001-ledger-timeout --reason ..."
            in suggested.output.splitlines()), suggested.output


def test_show_lists_an_entrys_conflicts_and_its_near_duplicate_cluster(home):
    """The recall view's banners quote three conflicts and send to `show` for the rest, and recall folds a
    lesson's near-duplicates naming their cluster: `show` lists both."""
    namespace, cluster = _curated_and_published(home)
    runner = CliRunner()
    shown = _said(runner.invoke(app, ["show", "run-0001-ledger-timeout", "--home", str(home.root)], terminal_width=200))
    assert "conflicts (1)" in shown
    assert "other_entry run-0002-ledger-timeout · status open" in shown and "other_text ledger timeout: 45 seconds" in shown
    member = _said(runner.invoke(app, ["show", "p1", "--home", str(home.root)], terminal_width=200))
    assert f"near-duplicate cluster (1) • cluster_id {cluster} · member_count 3" in member
    assert "proposal proposed" in member and "conflicts (0)" in member


def test_review_members_lists_a_proposals_members_before_a_decision(home):
    from tests.unit.test_clustering import PARAPHRASES

    namespace, cluster = _curated_and_published(home)
    runner = CliRunner()
    listed = runner.invoke(app, ["review", "members", cluster, "--home", str(home.root)], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == f"{namespace}/{cluster} 3 members · proposed"
    members = {line.split(" · ")[0].strip(): line for line in lines if re.match(r"  p\d · ", line)}
    assert set(members) == {"p0", "p1", "p2"} and all(" · active · 2026-11-2" in m for m in members.values())
    assert all(text in listed.output for text in PARAPHRASES[:3])
    assert f"decide: memcurator review approve|reject {cluster} --reason ..." in lines
    missing = runner.invoke(app, ["review", "members", "c_nothing", "--home", str(home.root)])
    assert missing.exit_code == 1 and "no cluster c_nothing" in missing.output


def test_recall_and_the_queues_in_a_namespace_the_store_does_not_hold_say_so(home):
    """A misspelt namespace read as a store with nothing to say ("no matching entries", an empty queue, exit 0)."""
    _curated_and_published(home)
    runner = CliRunner()
    missed = runner.invoke(app, ["recall", "staging cluster", "-n", "ns-b", "--home", str(home.root)])
    assert missed.exit_code == 1 and "no namespace 'ns-b' in the published store (1 namespaces; close: ns-a)" \
        in _said(missed), missed.output
    nothing = runner.invoke(app, ["recall", "zzzz qqqq", "-n", "ns-a", "--home", str(home.root)])
    assert nothing.exit_code == 0 and nothing.output == "no matching entries\n"
    for queue in ("clusters", "conflicts", "suggestions"):  # the curators' queues the same
        listed = runner.invoke(app, ["review", queue, "-n", "ns-b", "--home", str(home.root)])
        assert listed.exit_code == 1 and "no namespace 'ns-b'" in _said(listed), (queue, listed.output)
        assert runner.invoke(app, ["review", queue, "-n", "ns-a", "--home", str(home.root)]).exit_code == 0


def test_a_decision_says_which_night_applies_it(home):
    """A night reads the decisions made before its day's end: one made today is applied by today's night,
    built after midnight; "the next run" (of yesterday's night, the command's default) left it out. The
    message holds a command, printed on one line (the console broke it at 80 columns)."""
    _, cluster = _curated_and_published(home)
    approved = CliRunner().invoke(app, ["review", "approve", cluster, "--reason", "one lesson", "--home", str(home.root)])
    assert approved.exit_code == 0, approved.output
    (made,) = [f for f in home.decisions.rglob("*.jsonl")]
    day = made.parent.name  # decisions/<UTC day>/, the day of its stamp (decisions.record)
    # on one line, whatever the terminal's width: the command in it is copied whole
    assert approved.output.count("\n") == 1 and approved.output.rstrip().endswith(f"memcurator run --night {day}")
    assert f"the night of {day} applies it" in approved.output
    # the status of the snapshot (yesterday's night or before) says it waits
    status = CliRunner().invoke(app, ["status", "--home", str(home.root)])
    assert f"1 curator decision made since waits for the night of {day}" in _said(status), status.output


def test_the_decisions_a_night_leaves_out_are_counted_by_day(home):
    """The decisions made after the night (on a later UTC day) are counted by the day they were made: what the
    status of a snapshot, and a run of an earlier night, say is waiting."""
    from memcurator import decisions
    from memcurator.cli import waiting_decisions

    assert waiting_decisions(home, "2026-12-05") == {}
    for day, hour in (("2026-12-05", 9), ("2026-12-06", 9), ("2026-12-06", 10), ("2026-12-07", 1)):
        decisions.record(home.decisions, "ns-a", "cluster", f"c_{day}{hour}", "reject", "not one lesson", "kim",
                         now=datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00"))
    assert waiting_decisions(home, "2026-12-05") == {"2026-12-06": 2, "2026-12-07": 1}
    assert waiting_decisions(home, "2026-12-07") == {}


def test_land_keeps_two_files_of_one_name(tmp_path):
    """`memcurator land runs/*/transcript.jsonl`: every run's file lands (the second wrote over the first)."""
    from memcurator import ingest
    from tests.conftest import write, write_jsonl

    files = [write_jsonl(tmp_path / run / "transcript.jsonl", [write(f"lesson of {run}", entry_id=run)])
             for run in ("r1", "r2")]
    home = Home.from_env(tmp_path / "home")
    landed = CliRunner().invoke(app, ["land", *map(str, files), "--home", str(home.root)])
    assert landed.exit_code == 0, landed.output
    assert sorted(p.read_text() for p in ingest.discover(home.landing, [])) == sorted(f.read_text() for f in files)


def test_the_status_names_a_landed_file_changed_since_its_ingest(home):
    """The check in Dagster's history counts the files; the status, read on the home, names them."""
    _curated_and_published(home)
    landed = home.landing / "f.jsonl"
    read = landed.stat().st_size
    with landed.open("a") as f:
        f.write("{}\n")
    status = CliRunner().invoke(app, ["status", "--home", str(home.root)])
    assert "landed files changed since the ingest read them: 1" in _said(status), status.output
    assert f"f.jsonl: {read:,} bytes read, {read + 3:,} now" in status.output


def test_a_text_with_square_brackets_prints_as_written(home):
    """The console reads square brackets as its markup: a memory text "tick [x] in the form" printed as "tick
    in the form", and one holding "[/b]" stopped the command with a MarkupError. Texts and banners are printed
    as written in recall, show and the review queues (ids cannot hold brackets: the ingest quarantines them)."""
    from memcurator import night, store
    from tests.conftest import write, write_jsonl

    texts = {"tick": "tick [x] in the deploy form before the ledger release",
             "close": "the ledger's config parser chokes on [/b] in a value"}
    write_jsonl(home.landing / "f.jsonl", [write(text, entry_id=key, ts="2026-11-28T10:00:00Z")
                                           for key, text in texts.items()])
    with store.connect(home.store) as conn:
        night.ingest_and_derive(conn, home.landing, datetime(2026, 11, 30))
    store.publish(home.store, home.published)
    runner = CliRunner()
    recalled = runner.invoke(app, ["recall", "ledger", "-n", "ns-a", "--home", str(home.root)], terminal_width=200)
    assert recalled.exit_code == 0, recalled.output
    assert all(text in _said(recalled) for text in texts.values()), recalled.output
    shown = runner.invoke(app, ["show", "close", "--home", str(home.root)], terminal_width=200)
    assert shown.exit_code == 0 and texts["close"] in _said(shown), shown.output


def test_import_into_a_namespace_ingest_would_refuse_is_a_usage_error_and_lands_nothing(tmp_path):
    source = tmp_path / "notes.csv"
    source.write_text("text\nuse the staging database for load tests\n")
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["import", "flat", str(source), "-n", "team a!", "--home", str(home)])
    assert result.exit_code == 2 and "'team a!': a namespace is 1-128 of A-Z a-z 0-9" in _said(result), result.output
    assert not home.exists() or not any(Home.from_env(home).landing.rglob("*"))
    result = CliRunner().invoke(app, ["import", "flat", str(source), "-n", "team-a", "--home", str(home)])
    assert result.exit_code == 0 and "1 events from notes.csv landed" in _said(result), result.output


def test_import_says_what_the_ingest_will_quarantine_and_a_file_landed_before(tmp_path):
    """Counted as the ingest judges the events: a record the importer could not convert, and one converted
    with a value the ingest refuses (an importance of "high"), are both quarantined lines, not events."""
    from memcurator import ingest, store
    from memcurator.config import CurationConfig

    source = tmp_path / "notes.jsonl"
    source.write_text('{"text": "rotate the vault keys monthly", "importance": "high"}\n'
                      '{"text": "use blue-green deploys for the ledger"}\n{"nope": 1}\n')
    home = tmp_path / "home"
    result = CliRunner().invoke(app, ["import", "flat", str(source), "-n", "team-a", "--home", str(home)])
    assert result.exit_code == 0, result.output
    said = _said(result)
    assert "1 events from notes.jsonl landed" in said
    assert "2 lines will be quarantined by the ingest: missing_field 1, wrong_type 1" in said
    landed = Home.from_env(home)
    with store.connect(landed.store) as conn:  # the ingest agrees
        report = ingest.ingest_landing(conn, landed.landing, None, CurationConfig())
        assert (report.valid_events, report.quarantined_lines) == (1, 2)
    again = CliRunner().invoke(app, ["import", "flat", str(source), "-n", "team-a", "--home", str(home)])
    assert again.exit_code == 0 and "was landed before with this content" in _said(again), again.output


def test_a_night_runs_with_the_homes_settings_and_the_status_says_which(home, monkeypatch):
    """settings.toml in the home: the nightly job's runs take it (the UI's, the schedule's, `memcurator run`'s),
    the night records it, and the status says which settings differ from the defaults and what the next
    night would change. A file the night cannot use stops the run before anything runs."""
    import pipelines.definitions  # noqa: F401 (loaded before, for another home: the run reads this home's file)
    from memcurator import store
    from memcurator.home import HOME_ENV
    from memcurator.rederive import night_settings
    from tests.conftest import write, write_jsonl

    monkeypatch.setenv(HOME_ENV, str(home.root))  # (run sets both for the process: put back after)
    monkeypatch.setenv("DAGSTER_HOME", str(home.dagster_home))
    write_jsonl(home.landing / "f.jsonl", [write("pin the ledger client to 4.2", entry_id="e1", ts="2026-11-01T10:00:00Z")])
    home.settings.write_text("max_idle_days = \"sixty\"\n")
    refused = CliRunner().invoke(app, ["run", "--night", "2026-11-20", "--home", str(home.root)])
    assert refused.exit_code == 2 and "max_idle_days takes a whole number, not 'sixty'; nothing ran" in _said(refused)
    assert not home.store.exists()
    home.settings.write_text("max_idle_days = 365\n")
    ran = CliRunner().invoke(app, ["run", "--night", "2026-11-20", "--home", str(home.root)], terminal_width=200)
    assert ran.exit_code == 0, ran.output
    with store.connect(home.published, read_only=True) as conn:
        assert night_settings(conn)["max_idle_days"] == 365
    home.settings.write_text("max_idle_days = 400\n")
    status = CliRunner().invoke(app, ["status", "--home", str(home.root)], terminal_width=200)
    assert "settings of the night, not the defaults: max_idle_days 365 (default 30)" in _said(status), status.output
    assert "the next night runs with settings.toml's max_idle_days 400 (the published night's 365)" in _said(status)


def test_the_status_lists_the_runs_failed_since_the_snapshot_and_counts_the_earlier(home):
    """alerts.jsonl keeps every failure the sensor recorded: the status printed the whole file every time (a
    failure mended months ago read as today's), as console markup (an error holding "[/b]" stopped it)."""
    import json
    import os

    _curated_and_published(home)
    published = home.published.stat().st_mtime
    os.utime(home.published, (published, datetime(2026, 12, 1, 3, tzinfo=timezone.utc).timestamp()))
    alerts = [{"job": "nightly_curation", "run_id": "0ld0ld0ld0", "partition": "2026-11-29", "error": "mended since",
               "at": "2026-12-01T02:00:00+00:00"},
              {"job": "nightly_curation", "run_id": "abcdef123456", "partition": "2026-11-30",
               "error": "Execution of step \"core__entries\" failed: no space on [/b]\nTraceback ...", "at": "2026-12-01T04:00:00+00:00"}]
    (home.root / "alerts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in alerts))
    status = CliRunner().invoke(app, ["status", "--home", str(home.root)], terminal_width=200)
    assert status.exit_code == 0, status.output
    said = _said(status)
    assert "runs failed since the snapshot was published: 1" in said
    assert ('2026-12-01T04:00:00+00:00 nightly_curation night 2026-11-30 run abcdef12: Execution of step "core__entries" '
            'failed: no space on [/b]') in said and "Traceback" not in said  # the error's first line, as written
    assert "mended since" not in said and "1 run failure before the published snapshot" in said


def test_the_conflict_worklist_shows_what_each_conflict_is_with(home):
    """A curator resolves a conflict by its id: the worklist printed the ids alone, and what the other side
    says had to be looked up entry by entry. Each conflict now reads with the other entry and its text."""
    _curated_and_published(home)
    listed = CliRunner().invoke(app, ["review", "conflicts", "--home", str(home.root)], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    from memcurator import store

    with store.connect(home.published, read_only=True) as conn:
        (conflict, likely), = conn.execute("select conflict_id, likely_current from core.contradictions "
                                           "where entry_a = 'run-0001-ledger-timeout'").fetchall()
    said = _said(listed)
    assert (f"{conflict} detected with run-0002-ledger-timeout: ledger timeout: 45 seconds "
            f"(likely current: {likely})") in said, listed.output
    assert f"{conflict} detected with run-0001-ledger-timeout: the ledger timeout is 30 seconds " \
           "(likely current: this entry)" in said


def test_land_refuses_a_file_the_ingest_would_never_read_and_lands_a_folders_transcripts(tmp_path):
    """A file landed under a name the ingest does not read (notes.json) sat in the landing folder unread,
    without a word. `land` refuses it, and lands the transcript files under a folder it is given."""
    from memcurator import ingest

    home = Home.from_env(tmp_path / "home")
    (tmp_path / "notes.json").write_text('{"id": "e1"}\n')
    refused = CliRunner().invoke(app, ["land", str(tmp_path / "notes.json"), "--home", str(home.root)])
    # (the path, as given, may break over the error panel's lines)
    assert refused.exit_code == 2 and ": the ingest reads files named *.jsonl" in _said(refused), refused.output
    assert not home.landing.exists() or not any(home.landing.rglob("*"))
    runs = tmp_path / "runs"
    for path, body in (("r1/transcript.jsonl", "1"), ("r2/transcript.jsonl.gz", "2"), ("r2/README.md", "3"),
                       ("r3/.partial.jsonl", "4")):
        (runs / path).parent.mkdir(parents=True, exist_ok=True)
        (runs / path).write_text(body)
    landed = CliRunner().invoke(app, ["land", str(runs), "--home", str(home.root)])
    assert landed.exit_code == 0 and "landed 2 file(s)" in _said(landed) and "1 other file(s)" in _said(landed)
    assert sorted(p.name for p in ingest.discover(home.landing, [])) == ["transcript.jsonl", "transcript.jsonl.gz"]


def test_the_status_names_files_in_the_landing_the_ingest_does_not_read(home):
    """A file copied into the landing folder by other means, under another name, is never read: the status
    names it."""
    _curated_and_published(home)
    (home.landing / "later").mkdir()
    (home.landing / "later" / "events.json").write_text("{}\n")
    (home.landing / "later" / ".copying.jsonl.tmp").write_text("{}\n")  # a copy `land` has not renamed yet
    status = CliRunner().invoke(app, ["status", "--home", str(home.root)], terminal_width=200)
    assert "files in the landing folder the ingest does not read: 1" in _said(status), status.output
    assert "later/events.json" in status.output and ".copying" not in status.output
