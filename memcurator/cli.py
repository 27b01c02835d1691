"""The memcurator command line: everything a user does outside the Dagster UI."""

from __future__ import annotations

import atexit
import difflib
import gc
import re
import shutil
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.table import Table as RichTable

from memcurator import store
from memcurator.home import Home

app = typer.Typer(help="Nightly offline curation of AI-agent memory stores.", no_args_is_help=True,
                  add_completion=False)
console = Console()

# The interpreter's last garbage collection at exit walks every object the command's imports made (Dagster,
# Great Expectations, pandas): 1.6-1.8 s after `memcurator run` had printed its summary, 0.4 s after a
# recall. Frozen, they are left to the end of the process. What holds a resource is closed before then: store
# connections are context managers, and logging and temporary folders close in their own exit handlers.
atexit.register(gc.freeze)

HomeOption = typer.Option(None, "--home", help="State folder (default: $MEMCURATOR_HOME or ./.memcurator).")


def _home(path: Optional[Path]) -> Home:
    return Home.from_env(path).ensure()


def _night(night: Optional[str], option: str = "--night") -> str:
    """A night the nightly job can build (default: yesterday, UTC), or the usage error that says why not."""
    from memcurator.entries import buildable_night

    today = datetime.now(timezone.utc).date()
    try:
        return buildable_night(night or (today - timedelta(days=1)).isoformat(), today).isoformat()
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


def _time(text: str, option: str) -> datetime:
    """The time an option gives, or the usage error."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected a date, YYYY-MM-DD[THH:MM]", param_hint=option) from None


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console)


@app.command()
def init(home: Optional[Path] = HomeOption) -> None:
    """Create the home folder layout (landing, decisions, lake, DAGSTER_HOME with its settings)."""
    h = _home(home)
    console.print(f"home ready: {h.root}")


@app.command()
def demo(
    writes: int = typer.Option(50_000, min=0, help="Memory writes to generate."),
    namespaces: int = typer.Option(8, min=1, help="Namespaces (tenants/users/fleets)."),
    days: int = typer.Option(120, min=1, help="Days of history."),
    seed: int = typer.Option(7, help="Random seed; same seed and end date give the same files."),
    end: Optional[str] = typer.Option(None, help="Last day of the fleet (default: yesterday, UTC)."),
    home: Optional[Path] = HomeOption,
) -> None:
    """Generate a seeded demo fleet, land it, run the nightly job for its last day, print a summary."""
    from memcurator import demo as demo_fleet

    end_day = _night(end, "--end")
    h = _home(home)
    folder = demo_fleet.demo_folder(h.landing, date.fromisoformat(end_day), seed)
    if folder.exists():
        console.print(f"a demo fleet for {end_day} (seed {seed}) is already landed in {folder}: running the job on it")
        _run_and_report(h, end_day)
        return
    with _progress() as progress:
        task = progress.add_task("generating fleet", total=writes)
        truth = demo_fleet.generate(h.landing, h.truth, writes=writes, namespaces=namespaces, days=days,
                                    seed=seed, end=date.fromisoformat(end_day),
                                    progress=lambda n: progress.advance(task, n))
    console.print(f"landed {truth.events + truth.malformed_lines:,} lines ({truth.malformed_lines} malformed) "
                  f"in {folder}; ground truth in {h.truth / 'demo_truth.json'}")
    _run_and_report(h, end_day)


@app.command()
def land(paths: list[Path] = typer.Argument(..., exists=True, readable=True,
                                           help="Transcript files (JSON Lines, optionally gzipped), or folders: "
                                                "the transcript files under them."),
         home: Optional[Path] = HomeOption) -> None:
    """Copy transcript files into the landing folder (never edited after landing)."""
    from memcurator.ingest import TRANSCRIPT_SUFFIXES, is_transcript, land_files

    # a file the ingest does not read (its name) would sit in the landing unread, without a word
    unread = [p for p in paths if p.is_file() and not is_transcript(p)]
    if unread:
        raise typer.BadParameter(f"{', '.join(str(p) for p in unread)}: the ingest reads files named "
                                 f"*{', *'.join(TRANSCRIPT_SUFFIXES)} (not hidden): rename to land",
                                 param_hint="PATHS")
    files, skipped = [], 0
    for path in paths:
        if path.is_dir():
            under = sorted(p for p in path.rglob("*") if p.is_file() and not any(
                part.startswith(".") for part in p.relative_to(path).parts))
            files += [p for p in under if is_transcript(p)]
            skipped += sum(1 for p in under if not is_transcript(p))
        else:
            files.append(path)
    if not files:
        raise typer.BadParameter(f"no transcript file (*{', *'.join(TRANSCRIPT_SUFFIXES)}) under "
                                 f"{', '.join(str(p) for p in paths)}", param_hint="PATHS")
    target = land_files(files, _home(home).landing, datetime.now(timezone.utc))
    console.print(f"landed {len(files)} file(s) in {escape(str(target))}"
                  + (f"; {skipped} other file(s) under the folders left (not transcripts by their names)" if skipped else ""))


@app.command()
def run(night: Optional[str] = typer.Option(None, help="Night to build (YYYY-MM-DD); default yesterday UTC."),
        home: Optional[Path] = HomeOption) -> None:
    """Run the nightly job in-process for one night (ingest, derive, check, publish)."""
    night = _night(night)
    _run_and_report(_home(home), night)


@app.command("scaleout-night")
def scaleout_night(night: Optional[str] = typer.Option(None, help="Night to build (YYYY-MM-DD); default yesterday UTC."),
                   parallel: int = typer.Option(4, min=1, help="Shard runs at once."),
                   home: Optional[Path] = HomeOption) -> None:
    """Run one night over namespace shards: split, derive each shard (MEMCURATOR_EXECUTOR), merge, publish.

    Shards, shard root and executor come from MEMCURATOR_SHARDS, MEMCURATOR_SHARD_ROOT and
    MEMCURATOR_EXECUTOR (docs/scaleout.md); the tables are those of `memcurator run`.
    """
    from memcurator.scaleout import run_night

    night = _night(night)
    outcome = run_night(_home(home), night, parallel=parallel, progress=console.print)
    console.print(f"{'done' if outcome.success else 'FAILED'}: {outcome.shards} shards, "
                  f"split run {outcome.split_run}, merge run {outcome.merge_run or '-'}")
    if not outcome.success:
        raise typer.Exit(1)


def _run_and_report(h: Home, night: str) -> None:
    from memcurator.runner import run_nightly

    from memcurator.config import SettingsError

    try:
        with console.status(f"running nightly_curation for {night}"):
            outcome = run_nightly(h, night)
    except SettingsError as error:
        console.print(f"[red]{escape(str(error))}[/]; nothing ran")
        raise typer.Exit(2)
    failed_checks = [c for c in outcome.checks if not c[2]]
    colour = "green" if outcome.success else "red"
    console.print(f"[{colour}]nightly_curation {night}: {'success' if outcome.success else 'FAILED'}[/] "
                  f"(run {outcome.run_id[:8]}, {len(outcome.checks)} checks, {len(failed_checks)} not passing)")
    for asset, name, _ in failed_checks:
        console.print(f"  [yellow]check not passing[/]: {asset} {name}")
    for step in outcome.failed_steps:
        console.print(f"  [red]step failed[/]: {step}")
    if outcome.success:
        summary(h)
    else:
        raise typer.Exit(1)


def _print_some(lines: list[str], shown: int = 20) -> None:
    """The first ``shown`` lines (console markup, escaped by the caller), indented, then how many more."""
    for line in lines[:shown]:
        console.print(f"  {line}")
    if len(lines) > shown:
        console.print(f"  ... and {len(lines) - shown} more")


def _print_settings(h: Home, recorded: dict) -> None:
    """The settings the published night ran with where they are not the defaults, and what the home's
    settings.toml would change for the next night (or why the next night cannot use it)."""
    from memcurator.config import CurationConfig, SettingsError, read_settings

    defaults = CurationConfig().recorded()
    ran = {k: v for k, v in recorded.items() if k in defaults and v != defaults[k]}
    if ran:
        console.print("settings of the night, not the defaults: " + ", ".join(
            f"{k} {escape(repr(v))} (default {escape(repr(defaults[k]))})" for k, v in sorted(ran.items())))
    try:
        wanted = CurationConfig(**read_settings(h.settings)).recorded()
    except SettingsError as error:
        console.print(f"[red]the next night cannot start: {escape(str(error))}[/]")
        return
    changed = {k: (v, recorded.get(k, defaults[k])) for k, v in wanted.items()
               if recorded and v != recorded.get(k, defaults[k])}
    if changed:
        console.print(f"the next night runs with {escape(h.settings.name)}'s " + ", ".join(
            f"{k} {escape(repr(v))} (the published night's {escape(repr(was))})" for k, (v, was) in sorted(changed.items())))


def waiting_decisions(h: Home, night: str) -> dict[str, int]:
    """The curator decisions the night leaves out, made on a later day (UTC): their count by that day."""
    folder = h.decisions
    days = sorted(d for d in folder.iterdir() if d.is_dir() and d.name > night) if folder.is_dir() else []
    return {d.name: n for d in days if (n := sum(1 for _ in d.glob("*.jsonl")))}


def summary(h: Home) -> None:
    from memcurator.ingest import TRANSCRIPT_SUFFIXES, changed_since_ingest, unread_landing_files
    from memcurator.rederive import last_night, night_settings

    unread = unread_landing_files(h.landing)
    if unread:
        console.print(f"[yellow]files in the landing folder the ingest does not read: {len(unread)}[/] (it reads "
                      f"names ending {', '.join(TRANSCRIPT_SUFFIXES)}; rename them to have them read)")
        _print_some([escape(path) for path in unread])
    with store.connect(h.published, read_only=True) as conn:
        changed = changed_since_ingest(conn, h.landing, h.decisions)
        if changed:
            console.print(f"[yellow]landed files changed since the ingest read them: {len(changed)}[/] (what was "
                          "written to them after is in no table: land it as a new file; a landed file is never edited)")
            _print_some([f"{escape(source)}: {ingested:,} bytes read, " + (f"{now:,} now" if now is not None else "gone")
                         for source, ingested, now in changed])
        as_of = last_night(conn)
        if as_of:
            night = (as_of - timedelta(days=1)).date()
            console.print(f"published: night {night} (events and decisions before {as_of:%Y-%m-%d %H:%M} UTC)")
            _print_settings(h, night_settings(conn))
            waiting = waiting_decisions(h, night.isoformat())
            if sum(waiting.values()) == 1:
                console.print(f"1 curator decision made since waits for the night of {min(waiting)}")
            elif waiting:
                days = ", ".join(f"{day} ({n})" for day, n in sorted(waiting.items()))
                console.print(f"{sum(waiting.values())} curator decisions made since wait for the nights of "
                              f"their days: {days}")
        tables = conn.execute(
            "select table_schema, table_name from information_schema.tables "
            "where table_schema in ('raw', 'core', 'mart') and table_type in ('BASE TABLE', 'VIEW') order by 1, 2").fetchall()
        grid = RichTable(title="store", show_lines=False)
        grid.add_column("table")
        grid.add_column("rows", justify="right")
        for schema, name in tables:
            n = conn.execute(f'select count(*) from "{schema}"."{name}"').fetchone()[0]
            grid.add_row(f"{schema}.{name}", f"{n:,}")
        console.print(grid)
        reasons = conn.execute("select reason, count(*) from raw.quarantine group by 1 order by 2 desc").fetchall()
        if reasons:
            console.print("quarantined: " + ", ".join(f"{r} {n}" for r, n in reasons))
        if {"core.entry_lifecycle", "core.principle_proposals", "core.contested_entries"} <= {f"{a}.{b}" for a, b in tables}:
            from memcurator.health import active_set_near_duplicate_rate

            states = dict(conn.execute("select state, count(*) from core.entry_lifecycle group by 1").fetchall())
            proposals = conn.execute("select count(*) from core.principle_proposals where status = 'proposed'").fetchone()[0]
            contested = conn.execute("select count(*) from core.contested_entries").fetchone()[0]
            rate, _ = active_set_near_duplicate_rate(conn)
            console.print(
                "curation: " + ", ".join(f"{k} {v:,}" for k, v in sorted(states.items(), key=lambda kv: -kv[1]))
                + f"\n{proposals:,} principle proposals await review (memcurator review clusters); "
                f"{contested:,} contested entries on the worklist (memcurator review conflicts); "
                f"{rate:.1%} of the active set restates another active entry")
    console.print(f"store: {h.store}\nanalyst snapshot: {h.published}  (make sql)\n"
                  f"UI: make ui  → http://127.0.0.1:3000 (asset lineage, checks, runs)")


@app.command()
def status(home: Optional[Path] = HomeOption) -> None:
    """Print table sizes, quarantine reasons and failed-run alerts from the published snapshot."""
    h = _home(home)
    if not h.published.exists():
        console.print("no published store yet: run `memcurator run` or `memcurator demo`")
        raise typer.Exit(1)
    summary(h)
    _print_alerts(h.root / "alerts.jsonl", datetime.fromtimestamp(h.published.stat().st_mtime, timezone.utc))


def _print_alerts(alerts: Path, published_at: datetime) -> None:
    """The failed runs the failure sensor recorded since the snapshot was published, each with its job,
    night, run and error; the earlier ones counted (the file keeps them all)."""
    import orjson

    if not alerts.exists():
        return
    recent, earlier = [], 0
    for line in alerts.read_bytes().splitlines():
        try:
            alert = orjson.loads(line)
            at = datetime.fromisoformat(alert["at"])
        except (orjson.JSONDecodeError, TypeError, KeyError, ValueError):
            alert, at = {"error": line.decode("utf-8", "replace")}, None  # a line not written by the sensor
        if at is not None and at <= published_at:
            earlier += 1
        else:
            recent.append(alert)
    if recent:
        console.print(f"[red]runs failed since the snapshot was published: {len(recent)}[/] ({escape(str(alerts))})")
        for alert in recent[-10:]:
            error = str(alert.get("error") or "").strip().splitlines()
            said = escape(error[0] if error else "(no message)")
            if "job" in alert:
                console.print(f"  {escape(str(alert.get('at')))} {escape(str(alert['job']))} night "
                              f"{escape(str(alert.get('partition')))} run {escape(str(alert.get('run_id'))[:8])}: {said}")
            else:
                console.print(f"  {said}")
        if len(recent) > 10:
            console.print(f"  ... and {len(recent) - 10} more")
    if earlier:
        console.print(f"{earlier} run failure{'s' if earlier > 1 else ''} before the published snapshot "
                      f"({escape(str(alerts))})")


def _published(h: Home) -> Path:
    if not h.published.exists():
        console.print("[red]no published store yet[/]: run `memcurator run` (or `memcurator demo`) first")
        raise typer.Exit(1)
    return h.published


@app.command("recall")
def recall_command(
    query: str = typer.Argument(..., help="What the agent is looking for."),
    namespace: str = typer.Option(..., "--namespace", "-n", help="Namespace to search (never crossed)."),
    k: int = typer.Option(5, "-k", min=1, help="How many entries."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Return what was valid at this date (YYYY-MM-DD[THH:MM])."),
    raw: bool = typer.Option(False, "--raw", help="Search every entry, without curation (for comparison)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    home: Optional[Path] = HomeOption,
) -> None:
    """Recall entries for a query: BM25 relevance combined with the curation score, with banners."""
    import orjson

    from memcurator.recall import recall

    at = _time(as_of, "--as-of") if as_of else None
    published = _published(_home(home))
    hits = recall(query, namespace, published, k=k, as_of=at, mode="raw" if raw else "curated")
    if not hits:
        with store.connect(published, read_only=True) as conn:
            _known_namespace(conn, namespace)
    if as_json:
        print(orjson.dumps([h.__dict__ for h in hits], option=orjson.OPT_INDENT_2).decode())
        return
    if not hits:
        console.print("no matching entries")
    for h in hits:
        # the banners under their entry's text (printed before it, they read as the previous entry's)
        console.print(f"{h.rank:>2}. [bold]{escape(h.text)}[/]")
        for banner in h.banners:
            console.print(f"    [bold yellow]! {escape(banner)}[/]")
        console.print(f"    [dim]{escape(h.entry_id)} · {h.cls} · {h.tier} · relevance {h.relevance:.2f} · "
                      f"score {h.score:.2f}[/]")


def _known_namespace(conn, namespace: Optional[str]) -> None:
    """Exit 1 naming the closest namespaces when ``namespace`` (if given) has no entry in the store: a
    namespace misspelt read as a store with nothing to say (an empty list, exit 0)."""
    if namespace is None:
        return
    namespaces = [r[0] for r in conn.execute("select distinct namespace from core.entries").fetchall()]
    if namespace not in namespaces:
        close = difflib.get_close_matches(namespace, namespaces, n=3)
        console.print(f"[red]no namespace {escape(repr(namespace))}[/] in the published store ({len(namespaces)} "
                      "namespaces" + (f"; close: {escape(', '.join(close))})" if close else ")"))
        raise typer.Exit(1)


@app.command()
def show(entry_id: str = typer.Argument(..., help="The entry id."),
         namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Needed when the id exists in several."),
         home: Optional[Path] = HomeOption) -> None:
    """Print an entry's whole history: versions, lifecycle, recall view, recalls, checks, conflicts, near-duplicate
    cluster, supersede links, decisions with reasons."""
    from memcurator.history import entry_history

    with store.connect(_published(_home(home)), read_only=True) as conn:
        namespaces = [r[0] for r in conn.execute(
            "select namespace from core.entries where entry_id = ? and (? is null or namespace = ?)",
            [entry_id, namespace, namespace]).fetchall()]
        if len(namespaces) != 1:
            console.print(f"[red]{escape(entry_id)}[/]: found in {len(namespaces)} namespaces {escape(str(namespaces))}; "
                          "pass --namespace" if namespaces else f"[red]{entry_id}[/]: no such entry")
            raise typer.Exit(1)
        console.print(f"[bold]{escape(namespaces[0])} / {escape(entry_id)}[/]")
        for title, frame in entry_history(conn, namespaces[0], entry_id):
            console.print(f"\n[bold underline]{title}[/] ({frame.height})")
            for row in frame.iter_rows(named=True):
                shown = {k: v for k, v in row.items() if v not in (None, [], "")}
                # a list (banners, conflicts) an item to a line under its row, not as a Python list
                fields = [f"[dim]{k}[/] {f'{v:.4g}' if isinstance(v, float) else escape(str(v))}"
                          for k, v in shown.items() if not isinstance(v, list)]
                console.print("  • " + " · ".join(fields))
                for k, items in ((k, v) for k, v in shown.items() if isinstance(v, list)):
                    console.print(f"    [dim]{k}[/]\n" + "\n".join(f"      - {escape(str(item))}" for item in items))


@app.command("import")
def import_command(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="mcp-memory, flat, tau-bench, swe-agent or claude-code."),
    path: Path = typer.Argument(..., exists=True, dir_okay=False),
    namespace: str = typer.Option(..., "--namespace", "-n"),
    ts: Optional[str] = typer.Option(None, help="Time for records without one (default: the file's modification time)."),
    home: Optional[Path] = HomeOption,
) -> None:
    """Convert an existing store, export or agent transcript into log events in the landing folder."""
    from memcurator.config import CurationConfig, SettingsError, read_settings
    from memcurator.importers import FORMATS, flat, ingest_preview, land, mcp_memory, transcripts
    from memcurator.ingest import ID_PATTERN

    if fmt not in FORMATS:
        console.print(f"[red]unknown format {fmt}[/]; known: {', '.join(FORMATS)}")
        raise typer.Exit(2)
    if not re.fullmatch(ID_PATTERN, namespace):  # else ingest would quarantine every event (invalid_id)
        raise typer.BadParameter(f"{namespace!r}: a namespace is 1-128 of A-Z a-z 0-9 . _ : @ - and starts with a "
                                 "letter or digit", param_hint="--namespace")
    when = _time(ts, "--ts") if ts else datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    convert = {"mcp-memory": mcp_memory.convert, "flat": flat.convert, "tau-bench": transcripts.tau_bench,
               "swe-agent": transcripts.swe_agent, "claude-code": transcripts.claude_code}[fmt]
    h = _home(home)
    try:
        cfg = CurationConfig(**read_settings(h.settings))  # the settings the ingest will judge the events with
    except SettingsError as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(2)
    events = convert(path, namespace, when)
    landed = set((h.landing / f"import-{fmt}").glob("*.jsonl"))
    target = land(events, h.landing, fmt, path)
    if target in landed:  # a landed file is named by its content
        console.print(f"{escape(path.name)} was landed before with this content, as {escape(str(target))}: nothing new")
        return
    valid, quarantined = ingest_preview(target, cfg)
    console.print(f"{valid} events from {escape(path.name)} landed in {escape(str(target))}")
    if quarantined:
        # judged as the ingest judges them: records not converted, and events holding values it refuses
        console.print(f"[yellow]{sum(n for _, n in quarantined)} lines will be quarantined by the ingest: "
                      + ", ".join(f"{escape(reason)} {n}" for reason, n in quarantined) + "[/]")


review = typer.Typer(help="Curator queues: principle proposals and conflicts.", no_args_is_help=True)
app.add_typer(review, name="review")


@review.command("clusters")
def review_clusters(namespace: Optional[str] = typer.Option(None, "--namespace", "-n"),
                    status: str = typer.Option("proposed", help="proposed, approved, rejected, unmerged or all."),
                    limit: int = typer.Option(20, min=1), home: Optional[Path] = HomeOption) -> None:
    """List principle proposals, largest and most recalled first."""
    with store.connect(_published(_home(home)), read_only=True) as conn:
        _known_namespace(conn, namespace)
        rows = conn.execute(
            """select namespace, cluster_id, member_count, recall_count, proven_count, distinct_runs, open_conflicts,
                      status, text from core.principle_proposals
               where (? is null or namespace = ?) and (? = 'all' or status = ?)
               order by member_count desc, recall_count desc, cluster_id limit ?""",
            [namespace, namespace, status, status, limit]).fetchall()
    # one proposal to a line and its text under it, as the conflicts: a table's nine columns broke the
    # cluster ids (what `review approve` takes) over three lines at a terminal's 80 columns
    console.print(f"principle proposals ({status}): {len(rows)} shown")
    for ns, cluster, members, recalls, proven, runs, conflicts, state, canonical in rows:
        more = (f" · [red]{conflicts} open conflicts[/]" if conflicts else "") + (f" · {state}" if status == "all" else "")
        console.print(f"[bold]{escape(ns)}/{escape(cluster)}[/] {members} members · {recalls} recalls · {proven} proven · "
                      f"{runs} runs{more}\n  {escape(canonical)}")
    if rows and status == "proposed":
        command("members: memcurator review members CLUSTER_ID; "
                "decide: memcurator review approve|reject CLUSTER_ID --reason ...")


@review.command("members")
def review_members(cluster_id: str = typer.Argument(..., help="The cluster (review clusters lists them)."),
                   home: Optional[Path] = HomeOption) -> None:
    """A proposal's members before deciding on it: each with its state, writer, similarity and text."""
    with store.connect(_published(_home(home)), read_only=True) as conn:
        proposal = conn.execute(
            """select namespace, status, member_count, open_conflicts, canonical_entry_id, text
               from core.principle_proposals where cluster_id = ?""", [cluster_id]).fetchone()
        members = conn.execute(
            """select c.entry_id, l.state, e.first_written_at, e.writer_agents, c.mean_similarity, e.text
               from core.near_duplicate_clusters as c
               left join core.entries as e using (namespace, entry_id)
               left join core.entry_lifecycle as l using (namespace, entry_id)
               where c.cluster_id = ? order by c.mean_similarity desc, c.entry_id""", [cluster_id]).fetchall()
    if not members:
        console.print(f"[red]no cluster {escape(cluster_id)}[/] in the published store")
        raise typer.Exit(1)
    if proposal:
        ns, status, count, conflicts, canonical, text = proposal
        console.print(f"[bold]{escape(ns)}/{escape(cluster_id)}[/] {count} members · {status}"
                      + (f" · [red]{conflicts} open conflicts[/]" if conflicts else "")
                      + f"\n  principle (the text of {escape(canonical)}): {escape(text)}")
    else:  # fewer members than min_principle_members: a cluster, not proposed
        console.print(f"[bold]{escape(cluster_id)}[/] {len(members)} members · not proposed (too few members)")
    for entry_id, state, written, writers, similarity, text in members:
        console.print(f"  {escape(entry_id)} · {state} · {written:%Y-%m-%d} · {escape(', '.join(writers or []))} · "
                      f"similarity {similarity:.2f}\n    {escape(text or '')}")
    if proposal and proposal[1] == "proposed":
        command(f"decide: memcurator review approve|reject {cluster_id} --reason ...")


def command(line: str) -> None:
    """Print a line that holds a command to copy on one line, whatever the terminal's width: the console
    breaks a longer line where it wraps it, and a command copied from two lines runs as two."""
    console.print(line, soft_wrap=True)


def _applied_from(decision: dict) -> str:
    """When a decision takes effect: a night's tables are those of its day's end, so the night of the day it
    was made is the first to apply it, built once that day is over (a run of an earlier night leaves it out)."""
    day = decision["ts"][:10]
    return (f"the night of {day} applies it, built once the day is over (UTC): the 02:00 run, "
            f"or memcurator run --night {day}")


def _decide(home: Optional[Path], kind: str, target: str, action: str, reason: str, curator: str,
            data: dict | None = None) -> None:
    from memcurator.decisions import record

    h = _home(home)
    table, key = ("core.principle_proposals", "cluster_id") if kind == "cluster" else ("core.contradictions", "conflict_id")
    with store.connect(_published(h), read_only=True) as conn:
        found = conn.execute(f"select namespace from {table} where {key} = ?", [target]).fetchall()
        extra = {}
        if kind == "cluster" and found:
            extra = dict(zip(("canonical_entry_id", "open_conflicts"), conn.execute(
                "select canonical_entry_id, open_conflicts from core.principle_proposals where cluster_id = ?",
                [target]).fetchone()))
    if not found:
        console.print(f"[red]no {kind} {escape(target)}[/] in the published store")
        raise typer.Exit(1)
    if kind == "cluster" and action == "approve" and extra.get("open_conflicts"):
        console.print(f"[red]refused[/]: its members are in {extra['open_conflicts']} open conflicts; "
                      "resolve them first (memcurator review conflicts)")
        raise typer.Exit(1)
    payload = {"canonical_entry_id": extra["canonical_entry_id"]} if kind == "cluster" and action == "approve" else {}
    line = record(h.decisions, found[0][0], kind, target, action, reason, curator, {**payload, **(data or {})})
    command(f"recorded {action} of {kind} {escape(target)} ({line['id']}); {_applied_from(line)}")


@review.command("approve")
def review_approve(cluster_id: str, reason: str = typer.Option(..., "--reason"),
                   curator: str = typer.Option("curator", "--curator"), home: Optional[Path] = HomeOption) -> None:
    """Approve a principle: it enters the active set and its members move under it."""
    _decide(home, "cluster", cluster_id, "approve", reason, curator)


@review.command("reject")
def review_reject(cluster_id: str, reason: str = typer.Option(..., "--reason"),
                  curator: str = typer.Option("curator", "--curator"), home: Optional[Path] = HomeOption) -> None:
    """Reject a proposal: members stay as they are; the cluster is not proposed again as is."""
    _decide(home, "cluster", cluster_id, "reject", reason, curator)


@review.command("unmerge")
def review_unmerge(cluster_id: str, reason: str = typer.Option(..., "--reason"),
                   curator: str = typer.Option("curator", "--curator"), home: Optional[Path] = HomeOption) -> None:
    """Undo an approval: every member is restored exactly as before."""
    _decide(home, "cluster", cluster_id, "unmerge", reason, curator)


SHOWN_CONFLICTS = 5  # an entry's conflicts the worklist prints, each with the other side's text


@review.command("conflicts")
def review_conflicts(namespace: Optional[str] = typer.Option(None, "--namespace", "-n"),
                     limit: int = typer.Option(20, min=1), home: Optional[Path] = HomeOption) -> None:
    """The worklist: contested entries, most recalled first, with their conflicts."""
    with store.connect(_published(_home(home)), read_only=True) as conn:
        _known_namespace(conn, namespace)
        rows = conn.execute(
            """select c.namespace, c.entry_id, c.recall_count, c.kinds, c.conflict_ids, c.is_likely_current, e.text
               from (select * from core.contested_entries c where (? is null or c.namespace = ?)
                     order by c.recall_count desc, c.max_confidence desc, c.entry_id limit ?) as c
               inner join core.entries as e using (namespace, entry_id)
               order by c.recall_count desc, c.max_confidence desc, c.entry_id""",
            [namespace, namespace, limit]).fetchall()
        # each entry's first conflicts with what the other side says: what a curator decides on
        shown = [f"{ns}/{k}" for ns, _, _, _, conflicts, _, _ in rows for k in conflicts[:SHOWN_CONFLICTS]]
        sides = {(ns, k): (kind, a, b, current, text_a, text_b) for ns, k, kind, a, b, current, text_a, text_b in conn.execute(
            """select k.namespace, k.conflict_id, k.kind, k.entry_a, k.entry_b, k.likely_current, a.text, b.text
               from core.contradictions as k
               join core.entries as a on a.namespace = k.namespace and a.entry_id = k.entry_a
               join core.entries as b on b.namespace = k.namespace and b.entry_id = k.entry_b
               where list_contains(?, k.namespace || '/' || k.conflict_id)""", [shown]).fetchall()} if shown else {}
    for ns, entry, recalls, kinds, conflicts, current, text in rows:
        console.print(f"[bold]{escape(ns)}/{escape(entry)}[/] recalled {recalls}× · {', '.join(kinds)} · "
                      f"{'likely current' if current else '[yellow]likely stale[/]'}\n  {escape(text)}")
        for conflict in conflicts[:SHOWN_CONFLICTS]:
            kind, a, b, likely, text_a, text_b = sides.get((ns, conflict), ("?", None, None, None, "", ""))
            other, other_text = (b, text_b) if a == entry else (a, text_a)
            verdict = "this entry" if likely == entry else other if likely else "undecided"
            console.print(f"  {conflict} {kind} with {escape(str(other))}: {escape(other_text)} "
                          f"[dim](likely current: {escape(verdict)})[/]")
        if len(conflicts) > SHOWN_CONFLICTS:
            command(f"  … and {len(conflicts) - SHOWN_CONFLICTS} more: memcurator show {escape(entry)} -n {escape(ns)}")
    command("resolve: memcurator review resolve CONFLICT_ID replace|narrow|retire|dismiss --reason ...")


@review.command("suggestions")
def review_suggestions(namespace: Optional[str] = typer.Option(None, "--namespace", "-n"),
                       limit: int = typer.Option(20, min=1), home: Optional[Path] = HomeOption) -> None:
    """New entries and the older entries they may replace; confirm one with `review confirm`."""
    with store.connect(_published(_home(home)), read_only=True) as conn:
        _known_namespace(conn, namespace)
        rows = conn.execute(
            """select s.namespace, s.entry_id, n.text, s.candidate_id, o.text, s.basis, round(s.score, 2)
               from core.supersede_suggestions s
               join core.entries n on n.namespace = s.namespace and n.entry_id = s.entry_id
               join core.entries o on o.namespace = s.namespace and o.entry_id = s.candidate_id
               where (? is null or s.namespace = ?) order by s.namespace, s.entry_id, s.rank limit ?""",
            [namespace, namespace, limit]).fetchall()
    for ns, new, new_text, old, old_text, basis, score in rows:
        console.print(f"[bold]{escape(ns)}/{escape(new)}[/] {escape(new_text)}\n  may replace {escape(old)}: "
                      f"{escape(old_text)}  [dim]({basis}, {score})[/]")
        command(f"  memcurator review confirm {escape(new)} --supersedes {escape(old)} --reason ...")


@review.command("confirm")
def review_confirm(entry_id: str, supersedes: str = typer.Option(..., "--supersedes"),
                   reason: str = typer.Option(..., "--reason"), curator: str = typer.Option("curator", "--curator"),
                   home: Optional[Path] = HomeOption) -> None:
    """Confirm that ENTRY_ID replaces the entry named by --supersedes (a supersede link by the curator)."""
    from memcurator.decisions import record

    h = _home(home)
    with store.connect(_published(h), read_only=True) as conn:
        found = conn.execute(
            "select namespace from core.entries e where entry_id = ? and exists "
            "(select 1 from core.entries o where o.namespace = e.namespace and o.entry_id = ?)",
            [entry_id, supersedes]).fetchall()
    if len(found) != 1:
        console.print(f"[red]{escape(entry_id)} and {escape(supersedes)} are not two entries of one namespace[/]")
        raise typer.Exit(1)
    line = record(h.decisions, found[0][0], "link", entry_id, "confirm", reason, curator, {"supersedes": supersedes})
    command(f"recorded: {escape(entry_id)} supersedes {escape(supersedes)} ({line['id']}); {_applied_from(line)}")


@review.command("resolve")
def review_resolve(conflict_id: str, action: str = typer.Argument(..., help="replace, narrow, retire or dismiss."),
                   reason: str = typer.Option(..., "--reason"), curator: str = typer.Option("curator", "--curator"),
                   home: Optional[Path] = HomeOption) -> None:
    """Resolve a conflict: replace (the likely-current side supersedes the other), narrow (both stay,
    scopes differ), retire (archive the stale side), dismiss (not a conflict)."""
    from memcurator.decisions import CONFLICT_ACTIONS

    if action not in CONFLICT_ACTIONS:
        raise typer.BadParameter(f"{action!r}: a conflict is resolved by {', '.join(CONFLICT_ACTIONS)}",
                                 param_hint="ACTION")
    _decide(home, "conflict", conflict_id, action, reason, curator)


@app.command("eval")
def eval_command(
    dataset: str = typer.Argument(..., help="locomo, situatedqa, sick, msrp, sts, tau-bench or synthetic."),
    paths: list[Path] = typer.Argument(None, exists=True, dir_okay=False, readable=True, help="The dataset's files."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the result as JSON here."),
) -> None:
    """Measure raw vs curated on an external dataset (gold never enters the log)."""
    import orjson

    from memcurator.eval.runner import DATASETS, SUITE, evaluate

    if dataset not in DATASETS:
        raise typer.BadParameter(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}", param_hint="DATASET")
    files = dict(SUITE).get(dataset, [])
    if files and not paths:  # without them it measured nothing (0 conversations) and said so in a note
        raise typer.BadParameter(f"{dataset} reads its files, such as "
                                 f"{' '.join('../shared/data/' + f for f in files)}", param_hint="PATHS")

    with console.status(f"evaluating {dataset}"):
        result = evaluate(dataset, list(paths or []))
    grid = RichTable(title=f"{result.dataset} (n = {result.n})")
    for col in ("metric", "raw", "curated"):
        grid.add_column(col, justify="right" if col != "metric" else "left")
    for metric in sorted(set(result.raw) | set(result.curated)):
        cells = [result.raw.get(metric), result.curated.get(metric)]
        grid.add_row(metric, *["" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v) for v in cells])
    console.print(grid)
    for note in result.notes:
        console.print(f"[dim]{note}[/]")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(result.as_dict(), option=orjson.OPT_INDENT_2))
        console.print(f"wrote {out}")


@app.command("eval-suite")
def eval_suite(data: Path = typer.Option(Path("../shared/data"), help="The external datasets folder."),
               out_dir: Path = typer.Option(Path("reports/eval"), help="Where the JSON results go."),
               report_path: Path = typer.Option(Path("docs/evaluation.md"), "--report", help="Markdown report."),
               check_floors: bool = typer.Option(True, help="Fail when a metric breaks its floor.")) -> None:
    """Run every dataset of the suite, write the JSON results and the report, enforce the floors."""
    import orjson

    from memcurator.eval import report
    from memcurator.eval.runner import SUITE, evaluate

    results, commands = [], []
    out_dir.mkdir(parents=True, exist_ok=True)
    for dataset, relative in SUITE:
        paths = [data / p for p in relative]
        missing = [p for p in paths if not p.exists()]
        if missing:
            console.print(f"[red]missing[/] {missing}")
            raise typer.Exit(2)
        with console.status(f"evaluating {dataset}"):
            result = evaluate(dataset, paths).as_dict()
        target = out_dir / f"{dataset}.json"
        target.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
        results.append(result)
        commands.append(f"memcurator eval {dataset} {' '.join(str(data / p) for p in relative)} --out {target}")
        console.print(f"{dataset}: raw {result['raw']} | curated {result['curated']}")
    report_path.write_text(report.markdown(results, commands))
    console.print(f"wrote {report_path}")
    if check_floors:
        broken = report.check_floors(results)
        for line in broken:
            console.print(f"[red]floor broken[/]: {line}")
        if broken:
            raise typer.Exit(1)
        console.print("[green]all floors hold[/]")


@app.command()
def catalogue() -> None:
    """Print the table catalogue (markdown) generated from the table declarations."""
    from memcurator.catalogue import markdown

    print(markdown())


@app.command("purge")
def purge_command(namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Purge this namespace."),
                  user: Optional[str] = typer.Option(None, "--user", help="Purge this end user's events."),
                  reason: str = typer.Option(..., help="Why (kept in the purge ledger)."),
                  yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
                  home: Optional[Path] = HomeOption) -> None:
    """The one hard delete: remove a namespace or a user from the log, the lake, every table and file."""
    from memcurator.purge import LEDGER, purge

    if (namespace is None) == (user is None):
        console.print("[red]give exactly one of --namespace or --user[/]")
        raise typer.Exit(2)
    kind, target = ("namespace", namespace) if namespace is not None else ("user_id", user)
    h = _home(home)
    if not yes and not typer.confirm(f"Permanently delete every event of {kind} {target!r} under {h.root}?"):
        raise typer.Exit(1)
    try:  # a night holding the store is waited for (an hour at most), as a run's steps wait
        receipt = purge(h, kind, target, reason, log=lambda line: console.print(f"[yellow]{escape(line)}[/]"))
    except ValueError as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(2)
    except store.StoreBusy as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1)
    console.print(f"purged {receipt.landing_lines} landed lines ({receipt.landing_files_rewritten} files), "
                  f"{receipt.store_events} events, {receipt.store_quarantine_rows} quarantined lines, "
                  f"{receipt.decision_files_deleted} decision files, {receipt.lake_rows} lake rows; "
                  f"re-derived as of {receipt.rederived_as_of}; receipt {receipt.purge_id} in {h.root / LEDGER}")


@app.command("crash-test")
def crash_test_command(kills: int = typer.Option(20, min=1, help="How many runs to kill."),
                       writes: int = typer.Option(5_000, min=1, help="Size of the seeded demo fleet."),
                       after_nights: int = typer.Option(0, "--after-nights", min=0, help="Kill the night after this many "
                                                        "uninterrupted ones (an incremental night, a delta publish)."),
                       workdir: Path = typer.Option(Path("reports/crash"), help="Scratch homes go here."),
                       out: Optional[Path] = typer.Option(None, "--out", help="Write the kills as JSON here.")) -> None:
    """kill -9 the nightly run at random moments; the store must open, the published snapshot be a whole
    night's and the rerun converge."""
    import orjson

    from memcurator.crash import as_dicts, crash_test

    result = crash_test(workdir, kills=kills, writes=writes, after_nights=after_nights, progress=console.print)
    bad = [k for k in result if not (k.store_opened and k.converged and k.published != "broken")]
    console.print(f"{len(result) - len(bad)} of {len(result)} killed runs: store opened, published snapshot whole, "
                  "rerun converged")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(as_dicts(result), option=orjson.OPT_INDENT_2))
    if bad:
        raise typer.Exit(1)


def _settings(assignments: list[str]) -> dict:
    """The NAME=VALUE assignments as curation settings (each NAME a field of CurationConfig, each value in
    its range)."""
    from memcurator.config import CurationConfig, SettingsError, switch

    defaults, values = CurationConfig(), {}
    for assignment in assignments:
        name, equals, raw = assignment.partition("=")
        if not equals or name not in defaults.as_dict():
            raise typer.BadParameter(f"{assignment!r}: expected NAME=VALUE, NAME a curation setting "
                                     "(memcurator/config.py)", param_hint="--set")
        kind = type(getattr(defaults, name))
        try:
            values[name] = switch(raw) if kind is bool else kind(raw)
        except ValueError:
            expected = "1 or 0 (true/false, yes/no, on/off)" if kind is bool else f"values of type {kind.__name__}"
            raise typer.BadParameter(f"{assignment!r}: {name} takes {expected}", param_hint="--set")
        try:
            CurationConfig(**values)
        except SettingsError as error:
            raise typer.BadParameter(f"{assignment!r}: {error}", param_hint="--set") from None
    return values


@app.command("rederive-check")
def rederive_check_command(night: Optional[str] = typer.Option(None, help="Night to derive again (YYYY-MM-DD); "
                                                                          "default the last one the store derived."),
                           setting: list[str] = typer.Option([], "--set", help="NAME=VALUE: derive with this curation "
                                                             "setting instead of the one the night recorded "
                                                             "(repeatable)."),
                           ask_judge: bool = typer.Option(False, "--ask-judge", help="With a chat judge: ask the "
                                                          "model about every pair again instead of taking the "
                                                          "night's stored verdicts (its answers need not repeat)."),
                           home: Optional[Path] = HomeOption,
                           out: Optional[Path] = typer.Option(None, "--out", help="Write the comparison as JSON here.")) -> None:
    """Derive the store's night again from its log alone and compare every table with the store's, row for
    row: the incremental nights must give the full derivation's tables. Exits 1 on any difference."""
    import orjson

    from memcurator.config import CurationConfig, read_settings
    from memcurator.entries import as_of_for_night
    from memcurator.rederive import StoreChanged, rederive_check

    h = _home(home)
    try:
        report = rederive_check(h.store, as_of_for_night(night) if night else None, overrides=_settings(setting),
                                ask_judge=ask_judge, known=CurationConfig(**read_settings(h.settings)))
    except (ValueError, StoreChanged) as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1)
    table = RichTable(Column("table", no_wrap=True), Column("rows", justify="right"), "rows only in one",
                      "same")
    count = lambda n: "-" if n is None else f"{n:,}"  # noqa: E731 (a view has no rows counted)
    for t in report.tables:
        rows = count(t.stored_rows) if t.stored_rows == t.rederived_rows else \
            f"{count(t.stored_rows)} -> {count(t.rederived_rows)}"
        only = f"stored {t.only_stored:,}, re-derived {t.only_rederived:,}" if t.only_stored or t.only_rederived else ""
        table.add_row(t.table, rows, only, "yes" if t.identical else (
            "[red]NO[/]" if t.same_columns else "[red]NO: columns or definition[/]"))
    console.print(table)
    console.print(report.verdict(), style=None if report.identical else "red")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2))
    if not report.identical:
        raise typer.Exit(1)


@app.command("profile-night")
def profile_night_command(night: Optional[str] = typer.Option(None, help="Night to derive (YYYY-MM-DD); default "
                                                                         "yesterday UTC."),
                          setting: list[str] = typer.Option([], "--set", help="NAME=VALUE: derive with this curation "
                                                            "setting instead of the home's settings.toml or the "
                                                            "default (repeatable)."),
                          home: Optional[Path] = HomeOption,
                          out: Optional[Path] = typer.Option(None, "--out", help="Write the profile as JSON here.")) -> None:
    """Where a night's time goes: ingest the landing's new files and derive the night on a copy of the store
    (made beside it, removed after; the store is not changed), with DuckDB's profile of every statement,
    summed by stage, by operator and by the stored tables read."""
    import orjson

    from memcurator.config import CurationConfig, SettingsError, read_settings
    from memcurator.entries import as_of_for_night
    from memcurator.profile import StoreUnavailable, copy_store, profile_night, text_summary

    as_of = as_of_for_night(_night(night))
    h = _home(home)
    try:
        cfg = CurationConfig(**{**read_settings(h.settings), **_settings(setting)})
    except SettingsError as error:
        raise typer.BadParameter(str(error), param_hint="settings.toml") from None
    with store.spill_space(h.store, "profile") as folder:
        try:
            copy = copy_store(h.store, folder)
        except StoreUnavailable as error:
            console.print(f"[red]{escape(str(error))}[/]")
            raise typer.Exit(1)
        with console.status(f"profiling the night of {as_of - timedelta(days=1):%Y-%m-%d} on a copy of the store"):
            profile = profile_night(copy, h.landing, as_of, cfg)
    for line in text_summary(profile):
        console.print(line, markup=False, highlight=False)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(profile, option=orjson.OPT_INDENT_2))
        console.print(f"wrote {out}")


@app.command("report")
def report_command(out: Path = typer.Option(Path("reports/store-health.html"), "--out", help="The HTML file to write."),
                   home: Optional[Path] = HomeOption) -> None:
    """Write a self-contained HTML report of the store-health history (one chart per series)."""
    from memcurator.report import write_report

    try:
        path = write_report(_published(_home(home)), out)
    except ValueError as error:
        console.print(f"[red]{escape(str(error))}[/]")
        raise typer.Exit(1)
    except OSError as error:
        console.print(f"[red]cannot write {out}: {error.strerror or error}[/]")
        raise typer.Exit(1)
    console.print(f"wrote {path}")


@app.command("bench")
def bench_command(entries: int = typer.Option(100_000, min=1, help="Entries (memory writes) in the generated fleet."),
                  namespaces: int = typer.Option(1_000, min=1, help="Namespaces they spread over."),
                  words: int = typer.Option(60, min=1, help="Words per entry."),
                  churn: float = typer.Option(0.0, min=0.0, max=1.0, help="Share of writes (half new entries, half new versions of stored ones) "
                                                            "for a second, incremental night."),
                  churn_nights: int = typer.Option(1, min=1, help="Churn nights one after the other (each on the "
                                                                  "churn share of new writes); the report gives each "
                                                                  "night's share of the full night, their median and mean."),
                  baseline_entries: int = typer.Option(20_000, min=1, help="Entries the naive datasketch baseline runs on."),
                  recall_entries: int = typer.Option(0, min=0, help="Also time recall() on one namespace of this many entries."),
                  workdir: Path = typer.Option(Path("reports/bench-home"), help="Scratch home (emptied first)."),
                  repeat: int = typer.Option(1, min=1, help="Runs; the report gives their medians."),
                  note: str = typer.Option("", help="What the report should say about the conditions of this run."),
                  job_night: bool = typer.Option(False, help="After the churn night, run the Dagster nightly job "
                                                             "on another churn share and time its steps."),
                  profile: bool = typer.Option(False, help="After timing the churn night, derive it again on a copy "
                                                           "of the store with DuckDB's profile of every statement "
                                                           "(memcurator/profile.py); in the result as churn.profile."),
                  keep: bool = typer.Option(False, "--keep", help="Keep the scratch home of the last run: WORKDIR/fleet, "
                                                                  "its store as the last night left it (e.g. for "
                                                                  "`memcurator rederive-check --home WORKDIR/fleet`)."),
                  out: Optional[Path] = typer.Option(None, "--out", help="Write the result as JSON here.")) -> None:
    """Time the nightly derivation stage by stage on a generated fleet, against a naive baseline."""
    import orjson

    from memcurator.bench import combine, recall_latency, run_bench

    runs = []
    for number in range(repeat):
        shutil.rmtree(workdir, ignore_errors=True)
        if repeat > 1:
            console.print(f"run {number + 1} of {repeat}")
        runs.append(run_bench(workdir / "fleet", entries, namespaces, words, churn, baseline_entries=baseline_entries,
                              progress=console.print, job_night=job_night, profile=profile,
                              churn_nights=churn_nights))
    result = combine(runs) | ({"note": note} if note else {})
    if recall_entries:
        result["recall"] = recall_latency(workdir / "recall", recall_entries)
        console.print(f"recall on a {recall_entries:,}-entry namespace, warm: p50 {result['recall']['p50_ms']} ms, "
                      f"p95 {result['recall']['p95_ms']} ms")
    grid = RichTable(title=f"nightly derivation, {entries:,} entries")
    for col in ("stage", "wall s", "cpu s", "kernel s", "rss MB", "entries/s"):
        grid.add_column(col, justify="left" if col == "stage" else "right")
    for s in result["stages"]:
        grid.add_row(s["name"], f"{s['wall_s']:.2f}", f"{s['cpu_s']:.2f}", f"{s['sys_s']:.2f}", f"{s['rss_mb']:,.0f}",
                     f"{s['entries_per_s']:,.0f}")
    console.print(grid)
    if keep:
        console.print(f"kept {workdir / 'fleet'}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
        console.print(f"wrote {out}")


@app.command("bench-ingest")
def bench_ingest_command(entries: int = typer.Option(10_000, min=1, help="Entries (memory writes) in the generated fleet; "
                                                                       "their recalls and checks land with them."),
                         part_events: int = typer.Option(20, min=1, help="Events per file in the layout of small files."),
                         repeat: int = typer.Option(3, min=1, help="Runs of each layout; the report gives their medians."),
                         workdir: Path = typer.Option(Path("reports/bench-ingest"), help="Scratch folder (emptied)."),
                         out: Optional[Path] = typer.Option(None, "--out", help="Write the result as JSON here.")) -> None:
    """Time the ingest of the same events landed in a few files and in many small ones (with the lake)."""
    import orjson

    from memcurator.bench import ingest_by_files

    shutil.rmtree(workdir, ignore_errors=True)
    result = ingest_by_files(workdir, entries, part_events, repeat, progress=console.print)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
        console.print(f"wrote {out}")


@app.command("bench-report")
def bench_report_command(results: list[Path] = typer.Argument(..., exists=True, dir_okay=False),
                         ingest: Optional[Path] = typer.Option(None, "--ingest", exists=True, dir_okay=False,
                                                              help="`memcurator bench-ingest --out` JSON to report too."),
                         out: Path = typer.Option(Path("docs/performance.md"), "--out")) -> None:
    """docs/performance.md (and its scaling plot) from `memcurator bench --out` JSON files."""
    import orjson

    from memcurator.bench import write_report

    loaded = [orjson.loads(p.read_bytes()) for p in results]
    commands = [f"memcurator bench --entries {r['entries']} --namespaces {r['namespaces']} --words {r['words']}"
                + (f" --churn {r['churn']['share']}" if "churn" in r else "")
                + (f" --churn-nights {len(r['churn']['series']['nights'])}" if "series" in r.get("churn", {}) else "")
                + (f" --repeat {r['repeats']}" if r.get("repeats", 1) > 1 else "")
                + (f" --recall-entries {r['recall']['entries']}" if "recall" in r else "")
                + (" --job-night" if "job_night" in r.get("churn", {}) else "")
                + (" --profile" if "profile" in r.get("churn", {}) else "") + f" --out {p}"
                for r, p in zip(loaded, results)]
    ingested = orjson.loads(ingest.read_bytes()) if ingest else None
    if ingested:
        commands.append(f"memcurator bench-ingest --entries {ingested['entries']} --part-events {ingested['part_events']} "
                        f"--repeat {ingested['repeats']} --out {ingest}")
    write_report(loaded, commands + [f"memcurator bench-report {' '.join(map(str, results))}"
                                     + (f" --ingest {ingest}" if ingest else "")], out, ingested)
    console.print(f"wrote {out}")


if __name__ == "__main__":
    app()
