"""`memcurator bench`: the nightly derivation timed stage by stage on a generated fleet, against a
naive datasketch baseline on the same data.

The fleet (seeded, numpy-vectorised, so a million entries generate in seconds): ``entries``
lesson writes of ``words`` words from a Zipf vocabulary of made-up words, spread over
``namespaces`` and 60 days; a share of them are restatements of an earlier entry of their
namespace with some words replaced (groups of 2-6). The truth is every pair of one group whose
word sets have Jaccard >= 0.6 (computed exactly), kept outside the log. As in the demo, a write in nine
corrects an earlier one (CORRECTED_SHARE): a restatement with a word made "not", which the default judge
finds in conflict with what it restates; half of them name it (supersedes, with a reason), and 40 % are
followed by a failing assertion check on the entry corrected, half of those naming the correction.
Without them, the stages that follow conflicts (links, contested entries, superseded states, the
recall view's conflicts) had nothing to do at any size.
Beside the writes, the fleet's agents recall and check what they wrote, in the demo's proportions (its
runs: 2-4 writes, 0-2 recalls, a check in one run of four): a recall for every three writes, returning
1-5 of the last 200 entries of its namespace (the first three injected), and a check for every twelve, on
one of the last 300 (15 % of them failing, transient). Those move usage, lifecycle and ranking as a
fleet's do; without them every entry of a night was unused.

Per stage: wall time, CPU time, RSS after the stage, and entries/s. The ingest and the derivation of
each night run in fresh processes of their own; the peak RSS of each is its process's, the
generator's excluded; the fleet is made, scored and changed in processes of their own (it waits in
Parquet files between them), so that its memory is not held beside the nights. The derivation's
process first imports the modules the ingest's imported: a nightly run derives in the process that
ingested.
The near-duplicate stage's pair recall and precision are measured against the truth. The naive
baseline (one datasketch ``MinHash`` per entry, ``MinHashLSH(threshold=0.6)`` insert and query per
namespace) runs on a sample of namespaces (``baseline_entries``) and is compared per entry.
``churn`` adds that share of new and changed writes after the full night and times the next one.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from memcurator import compaction, ingest, store
from memcurator.config import CurationConfig
from memcurator.home import Home
from memcurator.night import STEPS
from memcurator.profile import StatementLog, copy_store, profile_markdown, profile_night

START = datetime(2026, 9, 1)
DAYS = 60
VOCABULARY = 30_000
JACCARD = 0.6
GENERATE_SLICE = 250_000  # rows of tokens drawn at once
LAND_PART_EVENTS = 1_000_000  # events per landed file (about 0.7 GB at 60 words)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


PEAK_SOURCE = "VmHWM"  # recorded with each run: runs without it took ru_maxrss (see _peak_mb)


_peak_seen = 0.0


def _peak_mb() -> float:
    """This process's own peak RSS. Not ``ru_maxrss``: a spawned child inherits its parent's high-water
    mark through exec, so each night's process would report the generator's peak whenever that was larger.
    (The kernel syncs RSS counters lazily, so VmHWM can read a little lower than before: kept as a maximum.)"""
    global _peak_seen
    try:
        with open("/proc/self/status") as f:
            now = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _peak_seen = max(_peak_seen, now)
    return _peak_seen


RECALLS_PER_WRITE = 1 / 3
RECALL_RESULTS = (1, 5)
RECALLED_FROM = 200  # a recall returns some of the last entries of its namespace
CHECKS_PER_WRITE = 1 / 12
CHECKED_FROM = 300
TRANSIENT_FAILURES = 0.15
# Corrections, in the demo's proportions (its config facts: 11 % of its writes correct an earlier value,
# half of them naming it, 39 % followed by a failing assertion check on the old value, half of those
# naming the correction): a restatement that negates what it restates.
CORRECTED_SHARE = 0.11
CORRECTIONS_LINKED = 0.5     # with supersedes and a reason
CORRECTIONS_CHECKED = 0.4    # the entry corrected fails an assertion check 30 s after
CHECKS_NAME_CORRECTION = 0.5  # that check names the correction (corrected_by)
NEGATION = "not"
CORRECTION_REASON = "corrected by a later run"

_RECALLS = {"id": pl.String, "namespace": pl.String, "ts": pl.Datetime("us"),
            "results": pl.List(pl.Struct({"entry_id": pl.String, "rank": pl.Int64, "injected": pl.Boolean}))}
_CHECKS = {"id": pl.String, "namespace": pl.String, "ts": pl.Datetime("us"), "entry_id": pl.String,
           "status": pl.String, "error_class": pl.String, "corrected_by": pl.String}


@dataclass
class Fleet:
    frame: pl.DataFrame          # namespace, entry_id, ts, text, group (-1 when unique), corrects, supersedes
    truth: set = field(default_factory=set)   # (namespace, entry_a, entry_b) with a < b
    recalls: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_RECALLS))
    checks: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_CHECKS))


def _words(rng: np.random.Generator) -> np.ndarray:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(4, 10, VOCABULARY)
    raw = ["".join(rng.choice(letters, n)) for n in lengths]
    return np.array(sorted(set(raw)))


def generate(entries: int, namespaces: int, words: int = 60, seed: int = 1, restated_share: float = 0.3,
             id_prefix: str = "b", used: bool = True, corrected_share: float = CORRECTED_SHARE) -> Fleet:
    """``used``: with the recalls and checks of the entries (drawn after the writes, from the same seed).

    ``corrected_share`` of the entries are corrections: restatements with one word made NEGATION (the
    default judge's negation conflict with what they restate), ``corrects`` naming the group's first entry,
    whose words they restate; CORRECTIONS_LINKED of them name it in ``supersedes`` too. They are drawn from
    a stream of their own, so the fleet is otherwise the one the same seed gave without them."""
    rng = np.random.default_rng(seed)
    vocab = _words(rng)
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks ** 1.05
    cdf = np.cumsum(p / p.sum())
    draw = lambda shape: np.minimum(np.searchsorted(cdf, rng.random(shape)), len(vocab) - 1)  # noqa: E731
    # drawn in slices of rows (the same stream of numbers as one draw) into int32: at 10M entries one
    # draw held three (entries x words) arrays of 8 bytes at once
    tokens = np.empty((entries, words), dtype=np.int32)
    for start in range(0, entries, GENERATE_SLICE):
        stop = min(entries, start + GENERATE_SLICE)
        tokens[start:stop] = draw((stop - start, words))
    ns = rng.integers(0, namespaces, entries)
    group = np.full(entries, -1)
    # restatements: an entry copies an earlier entry of its namespace and replaces 5-30 % of the words
    restated = np.flatnonzero(rng.random(entries) < restated_share)
    by_ns: dict[int, list[int]] = {}
    position = np.zeros(entries, dtype=np.int64)
    for i in range(entries):
        pool = by_ns.setdefault(int(ns[i]), [])
        position[i] = len(pool)
        pool.append(i)
    for i in restated:
        pool = by_ns[int(ns[i])]
        if position[i] == 0:
            continue
        source = pool[rng.integers(max(0, position[i] - 50), position[i])]
        anchor = group[source] if group[source] >= 0 else source
        group[source] = anchor
        group[i] = anchor
        replace = rng.random(words) < rng.uniform(0.05, 0.3)
        tokens[i] = np.where(replace, draw(words), tokens[anchor])
    corrects, linked = _corrections(tokens, group, seed, corrected_share / restated_share if restated_share else 0.0,
                                    len(vocab))
    words_of = np.append(vocab, NEGATION)
    texts = pl.concat([pl.Series([" ".join(words_of[row]) for row in tokens[start:start + GENERATE_SLICE]],
                                 dtype=pl.String)
                       for start in range(0, entries, GENERATE_SLICE)]) if entries else pl.Series([], dtype=pl.String)
    seconds = np.sort(rng.integers(0, DAYS * 86_400, entries))
    entry_id = lambda column: pl.when(pl.col(column) >= 0).then(  # noqa: E731
        id_prefix + pl.col(column).cast(pl.String).str.zfill(8)).alias(column)
    frame = pl.DataFrame({"ns": ns, "i": np.arange(entries), "seconds": seconds, "text": texts, "group": group,
                          "corrects": corrects, "supersedes": np.where(linked, corrects, -1)}).select(
        ("ns-" + pl.col("ns").cast(pl.String).str.zfill(5)).alias("namespace"),
        (id_prefix + pl.col("i").cast(pl.String).str.zfill(8)).alias("entry_id"),
        (pl.lit(START) + pl.duration(seconds=pl.col("seconds"))).alias("ts"),
        "text", "group", entry_id("corrects"), entry_id("supersedes"))
    del texts
    truth = set()
    members: dict[int, list[int]] = {}
    for i in np.flatnonzero(group >= 0):
        members.setdefault(int(group[i]), []).append(int(i))
    for idx in members.values():
        sets = {}  # an entry is in one group: its set is needed only while that group is paired
        for a, b in combinations(sorted(idx), 2):
            sa = sets.setdefault(a, set(tokens[a]))
            sb = sets.setdefault(b, set(tokens[b]))
            if len(sa & sb) / len(sa | sb) >= JACCARD:
                truth.add((f"ns-{ns[a]:05d}", f"{id_prefix}{a:08d}", f"{id_prefix}{b:08d}"))
    if not used:
        return Fleet(frame, truth)
    recalls, checks = usage(frame, frame, round(entries * RECALLS_PER_WRITE), round(entries * CHECKS_PER_WRITE), rng,
                            id_prefix)
    return Fleet(frame, truth, recalls, pl.concat([checks, correction_checks(frame, seed, id_prefix)]))


def _corrections(tokens: np.ndarray, group: np.ndarray, seed: int, share_of_restated: float,
                 negation: int) -> tuple[np.ndarray, np.ndarray]:
    """Which restatements are corrections (``share_of_restated`` of them): each gets the token ``negation``
    in one place (in ``tokens``, so the truth's word sets hold it as the texts do). Gives, per entry, the
    entry it corrects (its group's first; -1) and whether it names it (supersedes)."""
    rng = np.random.default_rng([seed, 1])
    restated = np.flatnonzero(group >= 0)
    restated = restated[group[restated] != restated]  # the group's first entry restates nothing
    chosen = restated[rng.random(restated.size) < share_of_restated]
    tokens[chosen, rng.integers(0, tokens.shape[1], chosen.size)] = negation
    corrects = np.full(group.size, -1)
    corrects[chosen] = group[chosen]
    linked = np.zeros(group.size, dtype=bool)
    linked[chosen] = rng.random(chosen.size) < CORRECTIONS_LINKED
    return corrects, linked


def correction_checks(frame: pl.DataFrame, seed: int, id_prefix: str) -> pl.DataFrame:
    """The failing assertion checks on entries that corrections correct: CORRECTIONS_CHECKED of the corrections
    of ``frame``, 30 s after each, CHECKS_NAME_CORRECTION of them naming it (corrected_by)."""
    rng = np.random.default_rng([seed, 2])
    fixes = frame.filter(pl.col("corrects").is_not_null())
    checked = fixes.filter(pl.Series(rng.random(fixes.height) < CORRECTIONS_CHECKED))
    named = pl.Series(rng.random(checked.height) < CHECKS_NAME_CORRECTION)
    return checked.select(
        (f"ck-{id_prefix}x" + pl.int_range(pl.len()).cast(pl.String).str.zfill(8)).alias("id"), "namespace",
        (pl.col("ts") + pl.duration(seconds=30)).alias("ts"), pl.col("corrects").alias("entry_id"),
        pl.lit("fail").alias("status"), pl.lit("assertion").alias("error_class"),
        pl.when(named).then(pl.col("entry_id")).alias("corrected_by")).cast(_CHECKS)


def usage(written: pl.DataFrame, anchors: pl.DataFrame, recalls: int, checks: int, rng: np.random.Generator,
          id_prefix: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``recalls`` recalls and ``checks`` checks, each made 5-300 s after a write of ``anchors`` (drawn at
    random) about entries of its namespace that ``written`` holds by then: a recall returns 1-5 distinct
    ones of the last RECALLED_FROM, the first three injected; a check is on one of the last CHECKED_FROM."""
    # every entry once, at its first write, in (namespace, time) order: an event's candidates are the rows
    # of its namespace up to where its own (namespace, time) sorts
    first = written.group_by("namespace", "entry_id").agg(pl.col("ts").min()).sort("namespace", "ts", "entry_id")
    codes = first.select(pl.col("namespace").unique(maintain_order=True)).with_row_index("code")

    def keys(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        coded = frame.join(codes, on="namespace", how="left", maintain_order="left")
        code = coded["code"].cast(pl.Int64).to_numpy() << 40
        return code, code + (coded["ts"] - START).dt.total_seconds().to_numpy()

    ns_start, by_time = keys(first)
    entry_ids = first["entry_id"].to_numpy()

    def events(count: int, window: int) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
        picked = anchors[rng.integers(0, anchors.height, count)] if count and anchors.height else anchors.clear()
        at = picked.select("namespace", (pl.col("ts") + pl.duration(seconds=pl.Series(
            rng.integers(5, 300, picked.height)))).alias("ts"))
        code, key = keys(at)
        end = np.searchsorted(by_time, key, side="right")  # one past the last entry written by then
        span = np.minimum(window, end - np.searchsorted(ns_start, code, side="left"))
        return at, end, span

    at, end, span = events(recalls, RECALLED_FROM)
    low, high = RECALL_RESULTS
    drawn = end[:, None] - 1 - (rng.random((at.height, high)) * span[:, None]).astype(np.int64)
    wanted = rng.integers(low, high + 1, at.height)
    results = (pl.DataFrame({"recall": np.repeat(np.arange(at.height), high),
                             "slot": np.tile(np.arange(high), at.height),
                             "entry_id": pl.Series(entry_ids[drawn.ravel()], dtype=pl.String)})
               .filter(pl.col("slot") < pl.Series(np.repeat(wanted, high)))
               .unique(["recall", "entry_id"], keep="first", maintain_order=True)
               .with_columns((pl.int_range(pl.len()).over("recall") + 1).alias("rank"))
               .group_by("recall", maintain_order=True)
               .agg(pl.struct("entry_id", "rank", (pl.col("rank") <= 3).alias("injected")).alias("results")))
    made = at.with_columns((f"rc-{id_prefix}" + pl.int_range(pl.len()).cast(pl.String).str.zfill(8)).alias("id"),
                           results["results"])
    at, end, span = events(checks, CHECKED_FROM)
    on = end - 1 - (rng.random(at.height) * span).astype(np.int64)
    checked = at.with_columns((f"ck-{id_prefix}" + pl.int_range(pl.len()).cast(pl.String).str.zfill(8)).alias("id"),
                              pl.Series("entry_id", entry_ids[on], pl.String),
                              pl.Series("status", np.where(rng.random(at.height) < TRANSIENT_FAILURES, "fail", "pass"),
                                        pl.String))
    checked = checked.with_columns(pl.when(pl.col("status") == "fail").then(pl.lit("transient")).alias("error_class"),
                                   pl.lit(None, pl.String).alias("corrected_by"))
    return made.select(list(_RECALLS)).cast(_RECALLS), checked.select(list(_CHECKS)).cast(_CHECKS)


def rewrites(fleet: Fleet, count: int, seed: int, day: datetime) -> Fleet:
    """New versions of ``count`` entries of ``fleet`` (a seeded sample), written during ``day``: each its
    entry's text with 5-30 % of its words replaced by words of the other texts sampled."""
    rng = np.random.default_rng(seed)
    rows = fleet.frame[np.sort(rng.choice(fleet.frame.height, min(count, fleet.frame.height), replace=False))]
    words = rows.select(pl.int_range(pl.len()).alias("row"), pl.col("text").str.split(" ").alias("word")).explode("word")
    share = rng.uniform(0.05, 0.3, rows.height)[words["row"].to_numpy()]
    donors = words["word"].sample(fraction=1.0, shuffle=True, seed=seed)
    texts = (words.with_columns(pl.when(pl.Series(rng.random(words.height) < share)).then(donors)
                                .otherwise(pl.col("word")).alias("word"))
             .group_by("row", maintain_order=True).agg(pl.col("word").str.join(" ").alias("text")))
    seconds = rng.integers(0, 86_400, rows.height)
    frame = rows.select("namespace", "entry_id").with_columns(
        (pl.lit(day) + pl.duration(seconds=pl.Series(seconds))).alias("ts"), texts["text"], pl.lit(-1).alias("group"),
        pl.lit(None, pl.String).alias("corrects"), pl.lit(None, pl.String).alias("supersedes"))
    return Fleet(frame.select(fleet.frame.columns).cast(fleet.frame.schema))


def churn_writes(fleet: Fleet, count: int, namespaces: int, words: int, seed: int, day: datetime,
                 id_prefix: str) -> Fleet:
    """``count`` writes for a churn night, all written during ``day``: half of them new entries (generated as
    the fleet was, their ids prefixed with ``id_prefix``, their times over the fleet's DAYS days brought into
    ``day`` in the same order, so a correction still follows what it corrects), half new versions of the
    fleet's entries."""
    changed = count // 2
    new = generate(count - changed, namespaces, words, seed, id_prefix=id_prefix, used=False)
    into_day = pl.lit(day) + (pl.col("ts") - pl.lit(START)) / DAYS
    writes = pl.concat([new.frame.with_columns(into_day.alias("ts")), rewrites(fleet, changed, seed, day).frame])
    # the recalls and checks after them, of these entries and the fleet's (the share of the full fleet's), and
    # the failing checks of what the new entries correct
    recalls, checks = usage(pl.concat([fleet.frame, writes]), writes, round(count * RECALLS_PER_WRITE),
                            round(count * CHECKS_PER_WRITE), np.random.default_rng(seed), id_prefix)
    return Fleet(writes, new.truth, recalls, pl.concat([checks, correction_checks(new.frame, seed, id_prefix)]))


def land(fleet: Fleet, landing: Path, name: str, part_events: int = LAND_PART_EVENTS) -> list[Path]:
    """The fleet as events: its memory.write events in JSONL files of at most ``part_events`` lines each
    (``name``, or ``name`` numbered when there are several: ingest quarantines a file over
    ``max_file_bytes`` whole, and a fleet's transcripts land as many files anyway), then the writes that
    name what they supersede, its recalls, and its checks by shape (passing, failing transient, failing
    assertions with and without the correction named), in files of their own named after ``name``."""
    when = pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("ts")
    stem, suffix = name.rsplit(".", 1)
    # a field is given or left out, never null (ingest quarantines a null where a string goes): the writes
    # that name what they supersede, and each shape of check, in files of their own
    writes = fleet.frame.select(
        ("ev-" + pl.col("entry_id") + "-" + pl.col("ts").dt.strftime("%Y%m%d%H%M%S")).alias("id"),
        pl.lit("memory.write").alias("type"), when, "namespace", "entry_id", "text", pl.lit("lesson").alias("class"),
        "supersedes", pl.lit(CORRECTION_REASON).alias("reason"))
    data = ["entry_id", "text", "class"]
    paths = _land_parts(writes.filter(pl.col("supersedes").is_null()).select(
        "id", "type", "ts", "namespace", pl.struct(*data).alias("data")), landing, name, part_events)
    linked = writes.filter(pl.col("supersedes").is_not_null())
    if linked.height:
        paths += _land_parts(linked.select("id", "type", "ts", "namespace",
                                           pl.struct(*data, "supersedes", "reason").alias("data")),
                             landing, f"{stem}-supersedes.{suffix}", part_events)
    recalls = fleet.recalls.select("id", pl.lit("memory.recall").alias("type"), when, "namespace",
                                   pl.struct(pl.lit("bench recall").alias("query"), "results").alias("data"))
    if recalls.height:
        paths += _land_parts(recalls, landing, f"{stem}-recalls.{suffix}", part_events)
    checks = fleet.checks.with_columns(when)
    for part, rows, fields in (
            ("checks", pl.col("status") == "pass", ["entry_id", "status"]),
            ("failed-checks", (pl.col("status") == "fail") & (pl.col("error_class") == "transient"),
             ["entry_id", "status", "error_class"]),
            ("failed-assertions", (pl.col("error_class") == "assertion") & pl.col("corrected_by").is_null(),
             ["entry_id", "status", "error_class"]),
            ("corrected-assertions", pl.col("corrected_by").is_not_null(),
             ["entry_id", "status", "error_class", "corrected_by"])):
        shaped = checks.filter(rows)
        if shaped.height:
            paths += _land_parts(shaped.select("id", pl.lit("memory.check").alias("type"), "ts", "namespace",
                                               pl.lit("test").alias("actor"), pl.struct(*fields).alias("data")),
                                 landing, f"{stem}-{part}.{suffix}", part_events)
    return paths


def _land_parts(events: pl.DataFrame, landing: Path, name: str, part_events: int) -> list[Path]:
    landing.mkdir(parents=True, exist_ok=True)
    parts = range(0, max(events.height, 1), part_events)
    stem, suffix = name.rsplit(".", 1)
    paths = [landing / (name if len(parts) == 1 else f"{stem}-{k + 1:03d}.{suffix}") for k in range(len(parts))]
    for path, start in zip(paths, parts):
        events.slice(start, part_events).write_ndjson(path)
    return paths


@dataclass
class Stage:
    name: str
    wall_s: float
    cpu_s: float
    rss_mb: float
    entries_per_s: float
    peak_rss_mb: float = 0.0  # the process's high-water mark once the stage is done: where it rises, the stage set it
    # the kernel's part of cpu_s: copying the store's pages from the OS cache, faulting in new memory. The same
    # night's varied with the machine from run to run (docs/curation.md). Runs recorded before it have none.
    sys_s: float = 0.0


def _timed(name: str, fn, entries: int) -> Stage:
    gc.collect()
    wall, cpu, kernel = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
    fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    kernel = resource.getrusage(resource.RUSAGE_SELF).ru_stime - kernel
    return Stage(name, round(wall, 3), round(cpu, 3), round(_rss_mb(), 1), round(entries / wall, 1) if wall else 0.0,
                 round(_peak_mb(), 1), round(kernel, 3))


def derive(conn, as_of: datetime, cfg: CurationConfig, entries: int,
           statements: dict[str, list[tuple[float, str]]] | None = None) -> list[Stage]:
    """The night's stages, timed; with ``statements``, each stage's DuckDB statements too (by stage name)."""
    stages = []
    for name, build in STEPS:
        timed = conn if statements is None else StatementLog(conn, statements.setdefault(name, []))
        stages.append(_timed(name, lambda b=build, c=timed: b(c, as_of, cfg), entries))
    return stages


STATEMENTS_SHOWN = 12  # the slowest statements a run keeps (each stage keeps its count and total)


def statement_summary(statements: dict[str, list[tuple[float, str]]]) -> dict:
    """Per stage the number of statements and their seconds, and the slowest statements of the night (their
    first words, comments dropped)."""
    slowest = sorted(((seconds, stage, query) for stage, log in statements.items() for seconds, query in log),
                     reverse=True)[:STATEMENTS_SHOWN]
    return {"stages": {stage: {"count": len(log), "seconds": round(sum(s for s, _ in log), 3)}
                       for stage, log in statements.items()},
            "slowest": [{"stage": stage, "seconds": round(seconds, 3), "statement": store.gist(query)}
                        for seconds, stage, query in slowest]}


def timed_night(store_path: Path, landing: Path, as_of: datetime, cfg: CurationConfig, entries: int) -> dict:
    """Ingest, then the derivation stage by stage, each in a fresh process (as a run of the ingest
    asset, then of the derived ones), so each has its own peak RSS. A nightly run derives in the
    process that ingested (pipelines/jobs.py: one process): the derivation's process first imports
    what the ingest's imported, so that it does not time imports the run made before it (the ingest's
    DuckDB statements with parameters import pandas, 0.3-0.6 s a process)."""
    ingested = in_fresh_process(_timed_ingest, store_path, landing, cfg, entries)
    derived = in_fresh_process(_timed_derivation, store_path, as_of, cfg, entries, ingested["modules"])
    return {"stages": ingested["stages"] + derived["stages"], "ingest_peak_rss_mb": ingested["peak_rss_mb"],
            "derivation_peak_rss_mb": derived["peak_rss_mb"], "derivation_memory_limit": derived["memory_limit"],
            "statements": derived["statements"]}


def _timed_ingest(store_path: Path, landing: Path, cfg: CurationConfig, entries: int, lake: Path | None = None) -> dict:
    loaded = set(sys.modules)
    with store.connect(store_path) as conn:
        stage = _timed("ingest", lambda: ingest.ingest_landing(conn, landing, lake, cfg), entries)
    return {"stages": [asdict(stage)], "peak_rss_mb": round(_peak_mb(), 1),
            "modules": sorted(set(sys.modules) - loaded)}


def _import_all(modules: Iterable[str]) -> None:
    """Import the named modules (those of another process, by name: a module made at run time, such
    as a test's, is left out)."""
    for name in modules:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except ImportError:
                pass


CLOSE = "checkpoint at close"


def _timed_derivation(store_path: Path, as_of: datetime, cfg: CurationConfig, entries: int,
                      modules: Iterable[str] = ()) -> dict:
    _import_all(modules)
    statements: dict[str, list[tuple[float, str]]] = {}
    with store.connect(store_path) as conn:
        stages = derive(conn, as_of, cfg, entries, statements)
        # the close of a night compacts the store when that is due and writes what the night left in the
        # write-ahead log into the file: a nightly run pays it, so the derivation counts it (timed here;
        # closing the connection after it finds nothing to write)
        stages.append(_timed(CLOSE, lambda: compaction.close_night(conn, as_of), entries))
        limit = store.connection_memory_limit(conn)
    return {"stages": [asdict(s) for s in stages], "peak_rss_mb": round(_peak_mb(), 1), "memory_limit": limit,
            "statements": statement_summary(statements)}


def _timed_compaction(store_path: Path, as_of: datetime, entries: int) -> dict:
    with store.connect(store_path) as conn:
        return asdict(_timed("compaction", lambda: compaction.close_night(conn, as_of, force=True), entries))


def in_fresh_process(fn, *args):
    """Run ``fn(*args)`` in a new interpreter, as a nightly run starts: its imports, compiled kernels
    and memory are its own, not the generator's."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def pair_quality(found: set, truth: set) -> dict:
    hit = len(found & truth)
    return {"pairs_found": len(found), "pairs_true": len(truth),
            "recall": round(hit / len(truth), 4) if truth else 1.0,
            "precision": round(hit / len(found), 4) if found else 1.0}


def naive_baseline(fleet: Fleet, max_entries: int, num_perm: int = 128) -> dict:
    """datasketch as most projects use it: one MinHash per entry, one LSH per namespace."""
    from datasketch import MinHash, MinHashLSH

    sizes = fleet.frame.group_by("namespace").len().sort("namespace")
    chosen, total = [], 0
    for ns, n in sizes.iter_rows():
        if total + n > max_entries and chosen:
            break
        chosen.append(ns)
        total += n
    sample = fleet.frame.filter(pl.col("namespace").is_in(chosen)).sort("ts", "entry_id")
    found = set()
    started = time.perf_counter()
    for ns, rows in sample.group_by("namespace", maintain_order=True):
        lsh = MinHashLSH(threshold=JACCARD, num_perm=num_perm)
        signatures = {}
        for entry, text in zip(rows["entry_id"], rows["text"]):
            m = MinHash(num_perm=num_perm)
            for word in set(text.split()):
                m.update(word.encode())
            for other in lsh.query(m):
                a, b = sorted((other, entry))
                sa, sb = signatures[other], set(text.split())
                if len(sa & sb) / len(sa | sb) >= JACCARD:  # verified, as the pipeline does
                    found.add((ns[0], a, b))
            lsh.insert(entry, m)
            signatures[entry] = set(text.split())
    wall = time.perf_counter() - started
    truth = {t for t in fleet.truth if t[0] in set(chosen)}
    return {"entries": sample.height, "namespaces": len(chosen), "wall_s": round(wall, 3),
            "entries_per_s": round(sample.height / wall, 1)} | pair_quality(found, truth)


WARMUP_ENTRIES = 2_000


def warm_kernels(root: Path) -> dict:
    """Two small nights (a full one, then a churn night) through the compiled loops, in a process of their
    own: numba compiles each kernel on its first call and caches it on disk (beside memcurator/kernels.py),
    so the timed nights load them as every night after an installation's first does. From a fresh
    checkout, the first timed night at 1M entries compiled them instead (its full night 81.3 s, the other
    runs' 53.1 and 60.3 s; shingling and the judge's features of 60k texts: 8.9 and 12.7 s with an empty
    cache, 0.8 and 1.0 s cached). Returns its wall time and the kernels it called."""
    return in_fresh_process(_warm_kernels, root)


def _warm_kernels(root: Path) -> dict:
    from memcurator import kernels  # loaded: every batch takes the compiled loops (text.compiled)
    from memcurator.night import ingest_and_derive

    started = time.perf_counter()
    home = Home.from_env(root).ensure()
    fleet = generate(WARMUP_ENTRIES, 20, 60, 7)
    land(fleet, home.landing, "fleet.jsonl")
    as_of = START + timedelta(days=DAYS + 1)
    with store.connect(home.store) as conn:
        ingest_and_derive(conn, home.landing, as_of)
        land(churn_writes(fleet, WARMUP_ENTRIES // 50, 20, 60, 8, as_of, "w"), home.landing, "churn.jsonl")
        ingest_and_derive(conn, home.landing, as_of + timedelta(days=1))
    called = sorted(name for name, kernel in vars(kernels).items() if getattr(kernel, "signatures", None))
    return {"wall_s": round(time.perf_counter() - started, 3), "kernels": called}


_TRUTH = {"namespace": pl.String, "entry_a": pl.String, "entry_b": pl.String}


def stash(fleet: Fleet, folder: Path) -> Path:
    """The fleet in Parquet files, for the processes that read it after the nights (``unstash``)."""
    folder.mkdir(parents=True, exist_ok=True)
    fleet.frame.write_parquet(folder / "frame.parquet")
    fleet.recalls.write_parquet(folder / "recalls.parquet")
    fleet.checks.write_parquet(folder / "checks.parquet")
    pl.DataFrame(sorted(fleet.truth), schema=_TRUTH, orient="row").write_parquet(folder / "truth.parquet")
    return folder


def unstash(folder: Path) -> Fleet:
    """The fleet ``stash`` wrote."""
    truth = pl.read_parquet(folder / "truth.parquet")
    return Fleet(pl.read_parquet(folder / "frame.parquet"), set(truth.iter_rows()),
                 pl.read_parquet(folder / "recalls.parquet"), pl.read_parquet(folder / "checks.parquet"))


# The fleet is made, scored and changed in processes of their own, and waits in Parquet files between
# them: the bench's process holds none of it while the nights run. At 10M entries the fleet is about 8 GB
# (its texts, and the truth as Python tuples; 0.8 GB at 1M): held beside the nights, it left that much
# less of the machine's memory to cache the store's 22 GB (a nightly run has no fleet beside it).
def _make_fleet(entries: int, namespaces: int, words: int, seed: int, landing: Path, kept: Path) -> dict:
    fleet = generate(entries, namespaces, words, seed)
    land(fleet, landing, "fleet.jsonl")
    stash(fleet, kept)
    return {"pairs": len(fleet.truth), "recalls": fleet.recalls.height, "checks": fleet.checks.height}


# What the full night left of the conflicts the fleet's corrections make: by kind, links, entries superseded
# and contested (a run's record of the work the stages that follow conflicts had).
CONFLICTS_HELD = """select
    (select count(*) from core.contradictions where kind = 'explicit'),
    (select count(*) from core.contradictions where kind = 'failed_check'),
    (select count(*) from core.contradictions where kind = 'detected'),
    (select count(*) from core.supersede_links),
    (select count(*) from core.entry_lifecycle where state = 'superseded'),
    (select count(*) from core.contested_entries)"""


def _score_fleet(store_path: Path, kept: Path, baseline_entries: int) -> dict:
    """The near-duplicate pairs found against the truth, the naive baseline on a sample of the fleet, and the
    conflicts the full night held."""
    fleet = unstash(kept)
    with store.connect(store_path, read_only=True) as conn:
        found = {tuple(r) for r in conn.execute("select namespace, least(entry_a, entry_b), greatest(entry_a, entry_b) "
                                                "from core.near_duplicate_pairs").fetchall()}
        held = conn.execute(CONFLICTS_HELD).fetchone()
    return {"near_duplicates": pair_quality(found, fleet.truth), "baseline": naive_baseline(fleet, baseline_entries),
            "conflicts": dict(zip(("explicit", "failed_check", "detected", "supersede_links", "superseded",
                                   "contested"), held))}


def _land_churn(kept: Path, landing: Path, name: str, count: int, namespaces: int, words: int, seed: int,
                day: datetime, id_prefix: str) -> dict:
    changed = churn_writes(unstash(kept), count, namespaces, words, seed, day, id_prefix)
    land(changed, landing, name)
    return {"writes": changed.frame.height, "recalls": changed.recalls.height, "checks": changed.checks.height}


def run_bench(workdir: Path, entries: int, namespaces: int, words: int = 60, churn: float = 0.0, seed: int = 1,
              baseline_entries: int = 20_000, progress=print, job_night: bool = False, profile: bool = False,
              churn_nights: int = 1) -> dict:
    """The full night, then with ``churn`` a churn night (``churn_nights`` of them, night after night), a
    night with no new file and (``job_night``) the Dagster job's night, each timed; with ``profile``, the
    first churn night derived again on a copy of the store as it was before it, with DuckDB's profile of
    every statement (memcurator/profile.py; not timed)."""
    cfg = CurationConfig()
    home = Home.from_env(workdir).ensure()
    warmup = warm_kernels(workdir / "kernel-warmup")
    progress(f"compiled kernels ready in {warmup['wall_s']:.1f} s (two small nights, not timed)")
    t = time.perf_counter()
    kept = workdir / "fleet"
    made = in_fresh_process(_make_fleet, entries, namespaces, words, seed, home.landing, kept)
    progress(f"generated {entries:,} entries in {namespaces:,} namespaces in {time.perf_counter() - t:.1f} s "
             f"({made['pairs']:,} true pairs; {made['recalls']:,} recalls, {made['checks']:,} checks)")
    as_of = START + timedelta(days=DAYS + 1)
    night = timed_night(home.store, home.landing, as_of, cfg, entries)
    stages = [Stage(**row) for row in night["stages"]]
    derivation = derivation_wall(stages)
    progress(f"derivation {derivation:.1f} s, peak RSS {night['derivation_peak_rss_mb']:,.0f} MB "
             f"(ingest {stages[0].wall_s:.1f} s, {night['ingest_peak_rss_mb']:,.0f} MB)")
    near = next(s for s in stages if s.name == "core.near_duplicate_pairs")
    if churn and job_night:
        # the snapshots of the two nights before the job night, as their runs publish them (not timed): the
        # job night's publish then finds what a publish finds on any night (store.publish)
        store.publish(home.store, home.published)
    scored = in_fresh_process(_score_fleet, home.store, kept, baseline_entries)
    result = {
        "entries": entries, "namespaces": namespaces, "words": words, "seed": seed, "commit": code_commit(),
        "stages": [asdict(s) for s in stages], "derivation_wall_s": derivation,
        "ingest_wall_s": stages[0].wall_s, "ingest_peak_rss_mb": night["ingest_peak_rss_mb"],
        "derivation_peak_rss_mb": night["derivation_peak_rss_mb"], "peak_source": PEAK_SOURCE,
        "derivation_memory_limit": night["derivation_memory_limit"],
        "near_duplicates": scored["near_duplicates"] | {"entries_per_s": near.entries_per_s},
        "recalls": made["recalls"], "checks": made["checks"], "conflicts": scored["conflicts"],
        "kernel_warmup_s": warmup["wall_s"],
        "statements": night["statements"],
    }
    baseline = scored["baseline"]
    result["baseline"] = baseline
    result["near_duplicate_speedup"] = round(near.entries_per_s / baseline["entries_per_s"], 1)
    progress(f"near-duplicates: {near.entries_per_s:,.0f} entries/s, recall {result['near_duplicates']['recall']}; "
             f"naive datasketch: {baseline['entries_per_s']:,.0f} entries/s, recall {baseline['recall']} "
             f"-> {result['near_duplicate_speedup']}x")
    if churn:
        # the writes of the day after the full night: as many new entries as new versions of the fleet's
        count = max(1, int(entries * churn))
        churned = in_fresh_process(_land_churn, kept, home.landing, "churn.jsonl", count, namespaces, words,
                                   seed + 1, as_of, "c")
        copy = copy_store(home.store, workdir / "before-churn") if profile else None
        timed = timed_night(home.store, home.landing, as_of + timedelta(days=1), cfg, entries)
        night = [Stage(**row) for row in timed["stages"]]
        churn_wall = derivation_wall(night)
        result["churn"] = {"share": churn, **churned, "derivation_wall_s": churn_wall,
                           "ratio_to_full": round(churn_wall / derivation, 3), "stages": [asdict(s) for s in night],
                           "statements": timed["statements"]}
        progress(f"churn night ({churn:.1%}): {churn_wall:.1f} s = {churn_wall / derivation:.1%} of the full night")
        if profile:
            profiled = in_fresh_process(profile_night, copy, home.landing, as_of + timedelta(days=1), cfg)
            shutil.rmtree(copy.parent)
            result["churn"]["profile"] = profiled
            reads = profiled["large_table_reads"]
            progress(f"the churn night profiled again: {profiled['statements']:,} statements, {profiled['thread_s']:.1f} s "
                     f"of the threads' time in DuckDB; {reads['count']:,} reads of stored tables of "
                     f"{reads['min_rows']:,} rows or more, {reads['thread_s']:.1f} s of it")
        if churn_nights > 1:
            series = [_series_night(1, derivation, night)]
            for number in range(2, churn_nights + 1):
                in_fresh_process(_land_churn, kept, home.landing, f"churn-{number}.jsonl", count, namespaces, words,
                                 seed + 10 + number, as_of + timedelta(days=number - 1), f"c{number}-")
                timed = timed_night(home.store, home.landing, as_of + timedelta(days=number), cfg, entries)
                later = [Stage(**row) for row in timed["stages"]]
                series.append(_series_night(number, derivation, later))
                progress(f"churn night {number} of {churn_nights}: {series[-1]['derivation_wall_s']:.1f} s = "
                         f"{series[-1]['ratio_to_full']:.1%} of the full night (its close {series[-1]['close_s']:.2f} s)")
            with store.connect(home.store, read_only=True) as conn:
                reasons = dict(conn.execute(
                    "select as_of, reason from work.compactions where as_of > $a", {"a": as_of}).fetchall())
            for row, number in zip(series, range(1, churn_nights + 1)):
                # why the close compacted (compaction.py: tables written alone, or the store merged), or None
                row["compaction"] = reasons.get(as_of + timedelta(days=number))
            walls = [row["derivation_wall_s"] for row in series]
            result["churn"]["series"] = {
                "nights": series, "median_wall_s": round(statistics.median(walls), 3),
                "median_ratio": round(statistics.median(walls) / derivation, 3),
                "mean_ratio": round(statistics.fmean(walls) / derivation, 3)}
            progress(f"{churn_nights} churn nights: median {result['churn']['series']['median_ratio']:.1%}, mean "
                     f"{result['churn']['series']['mean_ratio']:.1%} of the full night")
        after = as_of + timedelta(days=churn_nights - 1)  # the dates below follow the last churn night
        # what a night whose close merges the store pays on top (compaction.py: every COMPACT_DAYS nights)
        compacted = Stage(**in_fresh_process(_timed_compaction, home.store, after + timedelta(days=1), entries))
        result["churn"]["compaction_s"] = compacted.wall_s
        progress(f"compaction of the store after it: {compacted.wall_s:.2f} s")
        if job_night:
            store.publish(home.store, home.published)
            # the night after, as users run it: the Dagster job with its checks and publish, on the same share
            in_fresh_process(_land_churn, kept, home.landing, "job.jsonl", count, namespaces, words, seed + 2,
                             after + timedelta(days=1), "j")
            night = (after + timedelta(days=1)).date().isoformat()  # its as_of is the churn night's + 1 day
            result["churn"]["job_night"] = in_fresh_process(_job_night, home.root, night)
            job = result["churn"]["job_night"]
            progress(f"the nightly job on the next {churn:.1%}: {job['wall_s']:.1f} s "
                     f"({', '.join(f'{k} {v:.1f} s' for k, v in job['by_kind'].items())}; "
                     f"the snapshot written by {job['published_by']}, {job['published_mb']:,.0f} MB)")
        # the day after, a night with no new file in the landing: what any night costs, whatever changed (the
        # rules that move with the date, the tables derived whole, the close). Its only input is the few
        # events of the files before dated after their night (recalls and checks minutes after midnight).
        quiet_as_of = after + timedelta(days=3 if job_night else 2)
        timed = timed_night(home.store, home.landing, quiet_as_of, cfg, entries)
        quiet = [Stage(**row) for row in timed["stages"]]
        quiet_wall = derivation_wall(quiet)
        with store.connect(home.store, read_only=True) as conn:
            dated = conn.execute("select count(*) from raw.events where ts >= $since and ts < $as_of",
                                 {"since": quiet_as_of - timedelta(days=1), "as_of": quiet_as_of}).fetchone()[0]
        result["churn"]["quiet_night"] = {"derivation_wall_s": quiet_wall,
                                          "ratio_to_full": round(quiet_wall / derivation, 3), "events": dated,
                                          "stages": [asdict(s) for s in quiet], "statements": timed["statements"]}
        progress(f"a night with no new file after it ({dated} events of earlier files dated in it): {quiet_wall:.1f} s "
                 f"= {quiet_wall / derivation:.1%} of the full night")
    return result


SMALL_FILE_EVENTS = 20  # events per landed file when a fleet's runs each land a transcript of their own


def ingest_by_files(workdir: Path, entries: int = 10_000, part_events: int = SMALL_FILE_EVENTS, repeat: int = 3,
                    seed: int = 1, progress=print) -> dict:
    """The ingest of one generated fleet's events (``entries`` writes with their recalls and checks), landed
    as the bench lands them (a file for each kind of event) and in files of ``part_events`` events (a fleet
    whose runs each land a transcript), each into an empty store with the lake the nightly job writes, in a
    fresh process; medians of ``repeat`` runs. What a landed file costs beside its events."""
    cfg = CurationConfig()
    fleet = generate(entries, max(1, entries // 100), 60, seed)
    result = {"entries": entries, "part_events": part_events, "repeats": repeat, "commit": code_commit(), "layouts": {}}
    for layout, part in (("by_kind", LAND_PART_EVENTS), ("small_files", part_events)):
        landing = workdir / layout / "landing"
        shutil.rmtree(landing.parent, ignore_errors=True)
        files = land(fleet, landing, "fleet.jsonl", part)
        walls = []
        for number in range(repeat):
            home = workdir / layout / f"run-{number}"
            home.mkdir(parents=True)
            timed = in_fresh_process(_timed_ingest, home / "store.duckdb", landing, cfg, entries, home / "lake")
            walls.append(timed["stages"][0]["wall_s"])
            with store.connect(home / "store.duckdb", read_only=True) as conn:
                events = conn.execute("select count(*) from raw.events").fetchone()[0]
            lake_files = len(list((home / "lake").rglob("*.parquet")))  # one for each day of events
            shutil.rmtree(home)
        result["layouts"][layout] = {"files": len(files), "events": events, "lake_files": lake_files,
                                     "wall_s": round(statistics.median(walls), 3), "runs": walls}
        progress(f"ingest of {events:,} events in {len(files):,} files, with the lake ({lake_files:,} Parquet files): "
                 f"{result['layouts'][layout]['wall_s']:.2f} s (runs: {', '.join(f'{w:.2f}' for w in walls)})")
    by_kind, small = result["layouts"]["by_kind"], result["layouts"]["small_files"]
    more = small["files"] - by_kind["files"]  # none when part_events is no smaller than a kind's events
    result["ms_per_file"] = round(1000 * (small["wall_s"] - by_kind["wall_s"]) / more, 2) if more else None
    if more:
        progress(f"a landed file costs {result['ms_per_file']} ms beside its events")
    shutil.rmtree(workdir, ignore_errors=True)
    return result


def derivation_wall(stages: list[Stage]) -> float:
    """A night's derivation: its stages' wall times but the ingest's (timed apart)."""
    return round(sum(s.wall_s for s in stages if s.name != "ingest"), 3)


def _series_night(number: int, full: float, stages: list[Stage]) -> dict:
    """One night of a churn series: its derivation against the full night's, its close (the
    compaction, on the night one is due), and each stage's wall time, so that a series shows which
    stages the later nights pay more or less in than the first, which reads the store the full night
    wrote (docs/curation.md)."""
    wall = derivation_wall(stages)
    close = next(s.wall_s for s in stages if s.name == CLOSE)
    return {"night": number, "derivation_wall_s": wall, "ratio_to_full": round(wall / full, 3), "close_s": close,
            "stages": {s.name: s.wall_s for s in stages}}


JOB_KINDS = {"raw__events": "ingest", "analyst__published_store": "publish"}


def _job_night(home_root: Path, night: str) -> dict:
    """The nightly job (nightly_curation, one process, as the schedule runs it) for ``night`` on the home:
    its wall time, and each step's, summed by kind: ingest, tables (the derivation), checks, publish."""
    import dagster as dg

    from pipelines.definitions import build_definitions, build_resources

    defs = build_definitions(build_resources(home=str(home_root)))
    tables = {"__".join(key.path) for key in defs.resolve_asset_graph().get_all_asset_keys()}
    started = time.perf_counter()
    result = defs.resolve_job_def("nightly_curation").execute_in_process(
        partition_key=night, raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}})
    wall = time.perf_counter() - started
    steps = {e.step_key: e.event_specific_data.duration_ms / 1000 for e in result.all_events
             if e.event_type_value == dg.DagsterEventType.STEP_SUCCESS.value}
    # how the snapshot was written (store.publish: a clone of the store's file, the pages that differ
    # written over the snapshot before, or a copy) and how many bytes that wrote
    published = [(m.metadata["published_by"].value, m.metadata["written_bytes"].value)
                 for m in result.asset_materializations_for_node("analyst__published_store")]
    by_kind: dict[str, float] = {}
    for key, seconds in steps.items():
        kind = JOB_KINDS.get(key, "tables" if key in tables else "checks")
        by_kind[kind] = round(by_kind.get(kind, 0.0) + seconds, 3)
    return {"night": night, "success": result.success, "wall_s": round(wall, 3), "by_kind": by_kind,
            "steps": {k: round(v, 3) for k, v in sorted(steps.items())}, "peak_rss_mb": round(_peak_mb(), 1),
            "published_by": published[0][0] if published else None,
            "published_mb": round(published[0][1] / 1e6, 1) if published else None}


def combine(runs: list[dict]) -> dict:
    """One result from repeated runs: medians of the headline numbers, stage rows from the median run.

    The peak RSS figures are the largest of the runs."""
    if len(runs) == 1:
        return runs[0] | {"repeats": 1}
    median = lambda get: statistics.median(get(r) for r in runs)  # noqa: E731
    middle = sorted(runs, key=lambda r: r["derivation_wall_s"])[len(runs) // 2]
    out = middle | {
        "repeats": len(runs),
        "derivation_runs_s": [r["derivation_wall_s"] for r in runs],
        "derivation_wall_s": median(lambda r: r["derivation_wall_s"]),
        "ingest_wall_s": median(lambda r: r["ingest_wall_s"]),
        "ingest_peak_rss_mb": max(r["ingest_peak_rss_mb"] for r in runs),
        "derivation_peak_rss_mb": max(r["derivation_peak_rss_mb"] for r in runs),
        "near_duplicates": middle["near_duplicates"] | {"entries_per_s": median(lambda r: r["near_duplicates"]["entries_per_s"])},
        "baseline": middle["baseline"] | {"entries_per_s": median(lambda r: r["baseline"]["entries_per_s"])},
        "near_duplicate_speedup": round(median(lambda r: r["near_duplicate_speedup"]), 1),
    }
    if "churn" in middle:
        out["churn"] = middle["churn"] | {
            "derivation_wall_s": median(lambda r: r["churn"]["derivation_wall_s"]),
            "ratio_to_full": round(median(lambda r: r["churn"]["ratio_to_full"]), 3),
            "ratio_runs": [r["churn"]["ratio_to_full"] for r in runs],
        } | ({"compaction_s": median(lambda r: r["churn"]["compaction_s"])}
             if all("compaction_s" in r["churn"] for r in runs) else {})
        if all("quiet_night" in r["churn"] for r in runs):
            out["churn"]["quiet_night"] = middle["churn"]["quiet_night"] | {
                "derivation_wall_s": median(lambda r: r["churn"]["quiet_night"]["derivation_wall_s"]),
                "ratio_to_full": round(median(lambda r: r["churn"]["quiet_night"]["ratio_to_full"]), 3),
                "ratio_runs": [r["churn"]["quiet_night"]["ratio_to_full"] for r in runs]}
        else:
            out["churn"].pop("quiet_night", None)
        if all("series" in r["churn"] for r in runs):
            out["churn"]["series"] = middle["churn"]["series"] | {
                key: round(median(lambda r, k=key: r["churn"]["series"][k]), 3)
                for key in ("median_wall_s", "median_ratio", "mean_ratio")} | {
                "median_ratio_runs": [r["churn"]["series"]["median_ratio"] for r in runs]}
        else:
            out["churn"].pop("series", None)
        if all("job_night" in r["churn"] for r in runs):
            jobs = [r["churn"]["job_night"] for r in runs]
            peaks = [j["peak_rss_mb"] for j in jobs if "peak_rss_mb" in j]
            out["churn"]["job_night"] = (
                {k: v for k, v in middle["churn"]["job_night"].items() if k != "peak_rss_mb"}
                | {"wall_s": median(lambda r: r["churn"]["job_night"]["wall_s"]),
                   "wall_runs": [j["wall_s"] for j in jobs]}
                | ({"peak_rss_mb": max(peaks)} if len(peaks) == len(jobs) else {}))
    return out


def recall_latency(workdir: Path, entries: int = 50_000, queries: int = 500, seed: int = 3) -> dict:
    """recall() on one namespace of ``entries``, warm: p50/p95/p99 over queries drawn from the texts."""
    from memcurator.recall import recall

    home = Home.from_env(workdir).ensure()
    fleet = generate(entries, 1, 30, seed)
    land(fleet, home.landing, "one-namespace.jsonl")
    cfg = CurationConfig()
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, None, cfg)
        derive(conn, START + timedelta(days=DAYS + 1), cfg, entries)
        conn.execute("CHECKPOINT")
    store.publish(home.store, home.published)
    rng = np.random.default_rng(seed)
    texts = fleet.frame["text"].to_list()
    asked = [" ".join(rng.choice(texts[i].split(), 4, replace=False)) for i in rng.integers(0, entries, queries)]
    recall(asked[0], "ns-00000", home.published, k=10)  # warm: the index is built once and cached
    times = []
    for q in asked:
        t = time.perf_counter()
        recall(q, "ns-00000", home.published, k=10)
        times.append((time.perf_counter() - t) * 1000)
    p50, p95, p99 = np.percentile(times, [50, 95, 99])
    return {"entries": entries, "queries": queries, "p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2),
            "p99_ms": round(float(p99), 2)}


def _scaling_svg(points: list[tuple[int, float]], width: int = 520, height: int = 300) -> str:
    """Derivation wall time against entries on log-log axes, with the linear reference through the first point."""
    import math

    pad_l, pad_r, pad_t, pad_b = 60, 20, 20, 40
    xs = [math.log10(n) for n, _ in points]
    ys = [math.log10(max(s, 1e-3)) for _, s in points]
    x_lo, x_hi = math.floor(min(xs)), math.ceil(max(xs))
    y_lo, y_hi = math.floor(min(ys)), math.ceil(max(ys) + 0.5)
    x_hi, y_hi = max(x_hi, x_lo + 1), max(y_hi, y_lo + 1)

    def at(x, y):
        return (pad_l + (width - pad_l - pad_r) * (x - x_lo) / (x_hi - x_lo),
                pad_t + (height - pad_t - pad_b) * (1 - (y - y_lo) / (y_hi - y_lo)))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    for e in range(x_lo, x_hi + 1):
        x, _ = at(e, y_lo)
        parts.append(f'<line x1="{x:.1f}" y1="{pad_t}" x2="{x:.1f}" y2="{height - pad_b}" stroke="#eee"/>'
                     f'<text x="{x:.1f}" y="{height - pad_b + 14}" text-anchor="middle">{10 ** e:,}</text>')
    for e in range(y_lo, y_hi + 1):
        _, y = at(x_lo, e)
        parts.append(f'<line x1="{pad_l}" y1="{y:.1f}" x2="{width - pad_r}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{pad_l - 6}" y="{y + 4:.1f}" text-anchor="end">{10.0 ** e:g} s</text>')
    (x0, y0), (x1, y1) = at(xs[0], ys[0]), at(x_hi, ys[0] + (x_hi - xs[0]))
    parts.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#999" stroke-dasharray="4 3"/>')
    line = " ".join(f"{at(x, y)[0]:.1f},{at(x, y)[1]:.1f}" for x, y in zip(xs, ys))
    parts.append(f'<polyline points="{line}" fill="none" stroke="#2a6fdb" stroke-width="2"/>')
    for (n, s), x, y in zip(points, xs, ys):
        cx, cy = at(x, y)
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="#2a6fdb"/>'
                     f'<text x="{cx + 6:.1f}" y="{cy - 6:.1f}">{s:.1f} s</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle">entries (log)</text>'
                 f'<text x="{pad_l}" y="{pad_t - 6}">derivation wall time (log); dashed: linear growth</text></svg>')
    return "".join(parts)


REUSE = ("Reused from the previous night: core.memory_writes keeps the writes it has flattened, core.entries "
         "refolds only entries whose writes changed (core.entry_sources), the near-duplicate stage keeps keys and "
         "pairs of unchanged entries (memcurator/nearindex.py), the generality and lifecycle rules read each text once "
         "(core.entry_text_features), the contradiction candidates are paired again only around changed entries "
         "(core.contradiction_candidates) and the judge reads only pairs with an entry in a new version "
         "(core.judged_pairs), the clusters re-cluster only components whose edges changed (core.cluster_edges), "
         "usage, generality, importance, lifecycle, scores, proposals, the recall ranking and the curators' worklist "
         "(core.contested_entries) derive again only the entries (clusters) their inputs or the date moved, the "
         "contradictions only the pairs of those entries (memcurator/changes.py), and the kept tables carry no "
         "per-row night; the links, trust and store health are derived in full; "
         "the audit log, the supersede suggestions and the recall view are views over the tables.")


TARGET_ENTRIES = 1_000_000  # the size the targets of issue 8 are set at


def code_commit(root: Path | None = None) -> str:
    """The commit of the code measured (with ``+changes`` when the work tree differs from it outside docs/,
    where make bench writes its run files and report while it runs), or "unknown"."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs"],
                               cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def _mark(run: dict) -> str:
    return "" if run.get("peak_source") == PEAK_SOURCE else "\\*"


def _writes_only(run: dict) -> str:
    return "" if "recalls" in run else "†"


def _conflicts_cell(run: dict) -> str:
    held = run.get("conflicts")
    return "-‡" if held is None else f"{held['explicit']:,} / {held['failed_check']:,} / {held['detected']:,}"


def _peak_cell(stage: dict) -> str:
    # runs recorded before the bench kept the high-water mark per stage have none
    return f"{stage['peak_rss_mb']:,.0f}" if stage.get("peak_rss_mb") else "-"


def markdown(results: list[dict], commands: list[str], svg_name: str, ingested: dict | None = None) -> str:
    results = sorted(results, key=lambda r: r["entries"])
    out = ["# Performance", "",
           "Generated by `make bench` (`memcurator bench`, memcurator/bench.py) on this machine: 2 cores, 24 GB.",
           "Medians of the runs per size (`--repeat`); the derivation is the nightly job's tables from the ingested log "
           "(ingest timed apart) and, since f61c01d, the checkpoint that closing the store makes (runs before "
           "left it out); the ingest and the derivation of each night run in fresh processes of their own, "
           "each with its own peak RSS, and since b30fd41 the derivation's process first imports what the "
           "ingest's imported, as a nightly run derives in the process that ingested (runs before timed "
           "pandas' import in the derivation: 0.3-0.6 s). Each run first has the compiled kernels ready (numba "
           "compiles them on first use and caches them on disk) by two small nights of its own, not timed, as a night "
           "after an installation's first finds them; a run recorded without that (no `kernel_warmup_s` in its JSON) "
           "compiled them in its first night if its checkout's cache was empty. The fleet's agents recall and check "
           "what they wrote, in "
           "the demo's proportions: a recall for every three writes, returning 1-5 recent entries of its namespace, "
           "and a check for every twelve. As in the demo, a write in nine corrects an earlier one (a restatement "
           "negated): half name what they supersede, 40 % are followed by a failing assertion check on the entry "
           "corrected; the conflicts column counts what the full night held of them (explicit / failed check / "
           "detected). A churn night adds 1 % of writes, with their share of recalls, checks and corrections, "
           "to the previous night's store and derives again: half of the writes new entries, half new versions of "
           "entries the store holds, written the day after the full night. The naive baseline is single-threaded "
           "Python on a sample: its entries/s is also a gauge of how fast the machine ran at the time (compare runs "
           "made at different times by it).", "",
           f"![derivation time against entries]({svg_name})", "",
           "| entries | namespaces | ingest s | derivation s | derivation peak RSS MB | ingest peak RSS MB | "
           "near-dup entries/s | near-dup recall | naive entries/s | naive recall | speed-up | conflicts | churn night | "
           "code |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        nd, base = r["near_duplicates"], r["baseline"]
        churn = f"{r['churn']['ratio_to_full']:.1%} of full" if "churn" in r else ""
        out.append(f"| {r['entries']:,}{_writes_only(r)} | {r['namespaces']:,} | {r['ingest_wall_s']:.1f} | "
                   f"{r['derivation_wall_s']:.1f} | "
                   f"{r['derivation_peak_rss_mb']:,.0f}{_mark(r)} | {r['ingest_peak_rss_mb']:,.0f}{_mark(r)} | "
                   f"{nd['entries_per_s']:,.0f} | {nd['recall']} | {base['entries_per_s']:,.0f} | "
                   f"{base['recall']} | {r['near_duplicate_speedup']}x | {_conflicts_cell(r)} | {churn} | "
                   f"{r.get('commit', '-')} |")
    if any(_mark(r) for r in results):
        out += ["", "\\* Peak RSS read from `ru_maxrss`, which a spawned process inherits from its parent (the "
                    "generator): an upper bound, and where a stage's peak equals the ingest's, the parent's. Runs since "
                    "read the process's own peak (VmHWM)."]
    if any(_writes_only(r) for r in results):
        out += ["", "† A fleet of writes alone, without recalls or checks: a run recorded before the bench's fleet "
                    "had them (its nights had no usage to derive)."]
    if any("conflicts" not in r for r in results):
        out += ["", "‡ A fleet without corrections: a run recorded before the bench's fleet had them (3411d51); its "
                    "store held no conflict, supersede link or superseded entry, so the stages that follow them had "
                    "nothing to do. Its times are not comparable with a run on the fleet with corrections."]
    # the targets are set at a million entries: the largest run up to that size carries them; larger
    # runs (10M, documented, not in CI) show how time and memory grow beyond it
    largest = max((r for r in results if r["entries"] <= TARGET_ENTRIES), key=lambda r: r["entries"], default=results[0])
    beyond = [r for r in results if r["entries"] > TARGET_ENTRIES]
    out += (["", largest["note"]] if largest.get("note") else [])
    out += ["", f"Stages at {largest['entries']:,} entries (RSS after the stage; peak: the process's high-water mark "
                "after it, so the stage where it rises set it):", "",
            f"| stage | wall s | CPU s | RSS MB | peak RSS MB{_mark(largest)} | entries/s |", "|---|---|---|---|---|---|"]
    out += [f"| {s['name']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['rss_mb']:,.0f} | {_peak_cell(s)} | "
            f"{s['entries_per_s']:,.0f} |" for s in largest["stages"]]
    times = {s["name"]: s["wall_s"] for s in largest["stages"]}
    for r in beyond:
        runs = r.get("repeats", 1)
        growth = r["entries"] / largest["entries"]
        out += ["", f"Stages at {r['entries']:,} entries (a documented run, not in CI; "
                    f"{runs} run{'s' if runs > 1 else ''}{'; a fleet of writes alone' if _writes_only(r) else ''}), "
                    f"against {largest['entries']:,}: {growth:.0f}x the entries took "
                    f"{r['derivation_wall_s'] / largest['derivation_wall_s']:.1f}x the derivation time and "
                    f"{r['derivation_peak_rss_mb'] / largest['derivation_peak_rss_mb']:.1f}x the peak RSS."
                    + ("" if r.get("commit") == largest.get("commit") else
                       f" (Measured on other code, {r.get('commit', 'not recorded')} against "
                       f"{largest.get('commit', 'not recorded')}: the ratios mix the growth with the changes between.)")
                + (f" {r['note']}" if r.get("note") else ""),
                "",
                f"| stage | wall s | CPU s | RSS MB | peak RSS MB{_mark(r)} | x the {largest['entries']:,} run |",
                "|---|---|---|---|---|---|"]
        out += [f"| {s['name']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['rss_mb']:,.0f} | {_peak_cell(s)} | "
                f"{s['wall_s'] / times[s['name']] if times.get(s['name']) else 0:.1f} |" for s in r["stages"]]
    recalls = [r["recall"] for r in results if "recall" in r]
    if recalls:
        rc = recalls[-1]
        out += ["", f"`recall()` on one namespace of {rc['entries']:,} entries, warm, {rc['queries']} queries: "
                    f"p50 {rc['p50_ms']} ms, p95 {rc['p95_ms']} ms, p99 {rc['p99_ms']} ms."]
    out += ["", f"Against the targets (issue 8), from the {largest['entries']:,}-entry run:", ""]
    met = lambda ok: "met" if ok else "**not met**"  # noqa: E731
    runs = ", ".join(f"{x:.1f}" for x in largest.get("derivation_runs_s", [largest["derivation_wall_s"]]))
    out.append(f"- 1M entries, derivation <= 60 s: {largest['derivation_wall_s']:.1f} s (runs: {runs}) at {largest['entries']:,} entries "
               f"({met(largest['entries'] >= 1_000_000 and largest['derivation_wall_s'] <= 60)})")
    peak = largest["derivation_peak_rss_mb"]
    out.append(f"- peak RSS <= 4 GB: {peak / 1024:.1f} GB during the derivation at {largest['entries']:,} entries "
               f"(the ingest's process: {largest['ingest_peak_rss_mb'] / 1024:.1f} GB) "
               f"({met(largest['entries'] >= 1_000_000 and peak <= 4096)})")
    out.append(f"- near-duplicate stage >= 20x the naive baseline at equal or better recall: "
               f"{largest['near_duplicate_speedup']}x, recall {largest['near_duplicates']['recall']} vs "
               f"{largest['baseline']['recall']} ({met(largest['near_duplicate_speedup'] >= 20)})")
    churned = [r for r in results if "churn" in r and r["entries"] <= TARGET_ENTRIES]
    if churned:
        c = churned[-1]
        out.append(f"- 1 % churn night <= 10 % of a full night: {c['churn']['ratio_to_full']:.1%} (runs: {', '.join(f'{x:.1%}' for x in c['churn'].get('ratio_runs', [c['churn']['ratio_to_full']]))}) at {c['entries']:,} "
                   f"entries ({met(c['churn']['ratio_to_full'] <= 0.10)})")
        if "series" in c["churn"]:
            series = c["churn"]["series"]
            nights = series["nights"]
            alone = [str(row["night"]) for row in nights if row.get("compaction") == "deleted_rows"]
            merged = [str(row["night"]) for row in nights if row.get("compaction") not in (None, "deleted_rows")]
            out.append(f"  ({len(nights)} churn nights one after the other, each on "
                       f"{c['churn']['share']:.0%} of the fleet in new writes: median "
                       f"{series['median_ratio']:.1%}, mean {series['mean_ratio']:.1%} of the full night"
                       + (f" (medians of the runs: {', '.join(f'{x:.1%}' for x in series['median_ratio_runs'])})"
                          if "median_ratio_runs" in series else "")
                       + "; night by night in the run whose full night is the median: "
                       + ", ".join(f"{row['ratio_to_full']:.1%}" for row in nights)
                       + (f"; the close wrote tables again alone on night{'s' * (len(alone) > 1)} {', '.join(alone)}"
                          if alone else "")
                       + (f"; the close merged the store on night{'s' * (len(merged) > 1)} {', '.join(merged)}"
                          if merged else "")
                       + ("; no close compacted" if not alone and not merged else "") + ")")
        if "quiet_night" in c["churn"]:
            quiet = c["churn"]["quiet_night"]
            runs_q = ", ".join(f"{x:.1%}" for x in quiet.get("ratio_runs", [quiet["ratio_to_full"]]))
            dated = (f": its only input the {quiet['events']:,} events of earlier files dated in its day (recalls and "
                     "checks minutes after the last night)" if "events" in quiet else "")
            out.append(f"  (a night with no new file, the day after, took {quiet['derivation_wall_s']:.1f} s = "
                       f"{quiet['ratio_to_full']:.1%} of the full night (runs: {runs_q}){dated}. That is what a "
                       f"night costs whatever changed, within the churn night's {c['churn']['ratio_to_full']:.1%}; its "
                       "stages are in the table below)")
        if "compaction_s" in c["churn"]:
            out.append(f"  (a night whose close merges the store's row groups, every {compaction.COMPACT_DAYS} nights, pays {c['churn']['compaction_s']:.2f} s "
                       "more: measured by a merge of the store the last churn night left. A table whose deleted rows "
                       f"reach {compaction.DEAD_SHARE:.0%} of its stored rows is written again alone by the close of "
                       "that night, within its time)")
        if "job_night" in c["churn"]:
            job = c["churn"]["job_night"]
            out.append(f"  (the night after it as users run it, the Dagster job `nightly_curation` on another "
                       f"{c['churn']['share']:.0%} of writes, took {job['wall_s']:.1f} s"
                       + (f" (runs: {', '.join(f'{x:.1f}' for x in job['wall_runs'])} s)" if "wall_runs" in job else "")
                       + "; its steps in the run whose derivation is the median: "
                       + ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in job["by_kind"].items())
                       + (f" (the snapshot written by {job['published_by']}"
                          + (f", {job['published_mb']:,.0f} MB" if job.get("published_mb") is not None else "") + ")"
                          if job.get("published_by") else "")
                       + (f"; the job's process peaked at {job['peak_rss_mb'] / 1024:.1f} GB (the largest of the runs)"
                          if "peak_rss_mb" in job else "")
                       + ". The checks and the publish are not part of the derivation timed above)")
    if recalls:
        out.append(f"- recall() p95 <= 20 ms on a 50k-entry namespace, warm: {recalls[-1]['p95_ms']} ms "
                   f"({met(recalls[-1]['p95_ms'] <= 20 and recalls[-1]['entries'] >= 50_000)})")
    if churned:
        full = {s["name"]: s["wall_s"] for s in c["stages"]}
        # a run recorded since 78d81a1 carries the churn night's statements: two more columns, and the slowest
        counted = c["churn"].get("statements", {}).get("stages", {})
        statements = lambda name: (f" {counted[name]['count']} | {counted[name]['seconds']:.2f} |"  # noqa: E731
                                   if name in counted else "  | |") if counted else ""
        # a run recorded since the bench timed a night with no new file carries it: one more column
        quiet_stages = {s["name"]: s["wall_s"] for s in c["churn"].get("quiet_night", {}).get("stages", [])}
        out += ["", f"Churn night at {c['entries']:,} entries against the full night, per stage. {REUSE}", "",
                "| stage | full night s | churn night s |" + (" its DuckDB statements | their s |" if counted else "")
                + (" night with no new file s |" if quiet_stages else ""),
                "|---|---|---|" + ("---|---|" if counted else "") + ("---|" if quiet_stages else "")]
        out += [f"| {s['name']} | {full.get(s['name'], 0):.2f} | {s['wall_s']:.2f} |" + statements(s["name"])
                + (f" {quiet_stages[s['name']]:.2f} |" if s["name"] in quiet_stages else " |" if quiet_stages else "")
                for s in c["churn"]["stages"]]
        if counted:
            slowest = c["churn"]["statements"]["slowest"]
            out += ["", f"The churn night's DuckDB statements: {sum(v['count'] for v in counted.values())}, "
                    f"{sum(v['seconds'] for v in counted.values()):.2f} s of its {c['churn']['derivation_wall_s']:.2f} s "
                    f"(the stages' own Python, the rest). The slowest {len(slowest)}:", ""]
            out += [f"- {x['seconds']:.3f} s, {x['stage']}: `{x['statement']}`" for x in slowest]
        if "profile" in c["churn"]:
            out += ["", *profile_markdown(c["churn"]["profile"])]
    if ingested:
        out += ["", *ingest_markdown(ingested)]
    out += ["", "Commands:", "", "```sh", *commands, "```", ""]
    return "\n".join(out)


def ingest_markdown(result: dict) -> list[str]:
    """The lines of `memcurator bench-ingest`'s result in the report."""
    by_kind, small = result["layouts"]["by_kind"], result["layouts"]["small_files"]
    return [f"Ingest by landed files (`memcurator bench-ingest`, at {result['commit']}, medians of {result['repeats']} "
            f"runs): the {by_kind['events']:,} events of a {result['entries']:,}-entry fleet into an empty store, with "
            "the lake the nightly job writes. Landed as the bench lands them, "
            f"{by_kind['files']:,} files: {by_kind['wall_s']:.2f} s ({by_kind['lake_files']:,} Parquet files in the "
            f"lake). Landed in files of {result['part_events']} events, as a fleet whose runs each land a transcript, "
            f"{small['files']:,} files: {small['wall_s']:.2f} s ({small['lake_files']:,} Parquet files in the lake)."
            + (f" A landed file costs {result['ms_per_file']} ms beside its events."
               if result["ms_per_file"] is not None else "") + (f" {result['note']}" if result.get("note") else "")]


def write_report(results: list[dict], commands: list[str], path: Path, ingested: dict | None = None) -> None:
    svg = path.with_name("performance-scaling.svg")
    svg.write_text(_scaling_svg([(r["entries"], r["derivation_wall_s"]) for r in sorted(results, key=lambda r: r["entries"])]))
    path.write_text(markdown(results, commands, svg.name, ingested))
