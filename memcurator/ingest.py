"""Ingest: landed transcript files → validated events in DuckDB and the Parquet lake.

Python only reads bytes and splits lines; validation is one vectorised SQL statement
(sql/validate_events.sql) that gives every rejected line a precise reason. Files are taken in
sorted path order and events are deduplicated by id and content hash, so ingesting the same
files in any number of batches gives the same ``raw.events``:

- an event id seen before with the same content is a duplicate and adds nothing;
- an event id seen before with different content is quarantined (``duplicate_id_conflict``);
  the first landed (sorted file path, then line) wins.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import shutil
import zlib
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memcurator import sql
from memcurator.secrets import redact_sql
from memcurator.config import CurationConfig
from memcurator.store import ensure_table, registered
from memcurator.tables import CURATOR_DECISIONS, EVENTS, LANDED_FILES, QUARANTINE, C, Table, register

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}"
# A line is blank (skipped, not quarantined) only when it holds nothing but ASCII whitespace: str.strip()
# would also eat control characters such as \x1c and drop such a line silently.
BLANK = " \t\r\n\x0b\x0c"
BLANK_LINE = "^[" + "".join(f"\\x{ord(c):02x}" for c in BLANK) + "]*$"  # a line of BLANK characters only (RE2)
DECISIONS_PREFIX = "decisions/"
TRANSCRIPT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz", ".ndjson", ".ndjson.gz")
GZIP_MAGIC = b"\x1f\x8b"
GZIP_CHUNK = 1 << 16  # input bytes a broken gzip member is read in


@dataclass
class FileReport:
    source_file: str
    lines: int = 0
    valid_events: int = 0
    duplicate_events: int = 0
    quarantined_lines: int = 0


@dataclass
class IngestReport:
    files: list[FileReport] = field(default_factory=list)
    lake_days: int = 0  # days of event time whose new events went to the lake (write_lake)

    @property
    def valid_events(self) -> int:
        return sum(f.valid_events for f in self.files)

    @property
    def quarantined_lines(self) -> int:
        return sum(f.quarantined_lines for f in self.files)

    @property
    def duplicate_events(self) -> int:
        return sum(f.duplicate_events for f in self.files)


def is_transcript(path: Path) -> bool:
    return path.is_file() and path.name.endswith(TRANSCRIPT_SUFFIXES) and not path.name.startswith(".")


def unread_landing_files(landing: Path) -> list[str]:
    """The files in the landing folder the ingest never reads, by their names (not a transcript's suffix),
    relative to it: a file copied in under another name sits there unread. Hidden names are left out
    (a copy that `memcurator land` has not renamed yet)."""
    if not landing.exists():
        return []
    return sorted(source_name(landing, p) for p in landing.rglob("*")
                  if p.is_file() and not p.name.startswith(".") and not is_transcript(p))


def source_name(folder: Path, path: Path, prefix: str = "") -> str:
    return prefix + path.relative_to(folder).as_posix()


def land_files(paths: list[Path], landing: Path, now: datetime) -> Path:
    """Copy transcript files into a new folder of ``landing`` named by the UTC time; the folder it made.

    A landed file is never written over: the log is append-only, and a file the ingest has read is not
    read again. So each call makes a folder of its own (a second call in the same second gets ``_0002``,
    which sorts after the first: the landing order is the paths' order), and files of one name in one call
    land in numbered subfolders. Each is copied under a hidden name, then renamed: the ingest skips hidden
    names, so a run that lists the folder meanwhile never reads half a file."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    landing.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        target = landing / (stamp if n == 1 else f"{stamp}_{n:04d}")
        try:
            target.mkdir()
            break
        except FileExistsError:
            continue
    names = Counter(path.name for path in paths)
    for number, path in enumerate(paths, 1):
        folder = target / f"{number:04d}" if names[path.name] > 1 else target
        folder.mkdir(exist_ok=True)
        hidden = folder / f".{path.name}.tmp"
        shutil.copy2(path, hidden)
        os.replace(hidden, folder / path.name)
    return target


def changed_since_ingest(conn: duckdb.DuckDBPyConnection, landing: Path, decisions: Path) -> list[tuple[str, int, int | None]]:
    """The landed files (and decision files) whose size is not the one the ingest recorded: (source_file,
    bytes ingested, bytes now or None when gone). A landed file is never edited, and one the ingest has read
    is not read again: what was written to it after (a copy still running when a run listed the folder, an
    edit) is in no table. A purge records the files it rewrites. One stat a file, no read."""
    changed = []
    for source, ingested in conn.execute("select source_file, bytes from raw.landed_files order by source_file").fetchall():
        path = (decisions / source.removeprefix(DECISIONS_PREFIX) if source.startswith(DECISIONS_PREFIX)
                else landing / source)
        try:
            now = path.stat().st_size
        except FileNotFoundError:
            now = None
        if now != ingested:
            changed.append((source, ingested, now))
    return changed


def discover(folder: Path, already: Iterable[str], prefix: str = "") -> list[Path]:
    """Files under ``folder`` not ingested yet, in sorted relative-path order (landing order)."""
    known = set(already)
    if not folder.exists():
        return []
    found = [p for p in folder.rglob("*") if is_transcript(p)]
    return sorted(
        (p for p in found if source_name(folder, p, prefix) not in known),
        key=lambda p: source_name(folder, p, prefix),
    )


def _json_depth_exceeds(text: str, limit: int) -> bool:
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _quarantine_row(source: str, line_no: int, reason: str, detail: str, raw: bytes | str, cfg: CurationConfig) -> dict:
    if isinstance(raw, bytes):
        size = len(raw)
        text = raw[: cfg.quarantine_raw_chars * 4].decode("utf-8", errors="replace")
    else:
        size = len(raw.encode("utf-8", errors="replace"))
        text = raw
    text = text.replace("\x00", "\\u0000")[: cfg.quarantine_raw_chars]
    return {"source_file": source, "line_no": line_no, "reason": reason, "detail": detail,
            "raw_bytes": size, "raw_text": text}


def _too_deep(source: str, line_no: int, line: str, cfg: CurationConfig) -> dict:
    return _quarantine_row(source, line_no, "too_deeply_nested",
                           f"JSON nesting deeper than max_json_depth {cfg.max_json_depth}", line, cfg)


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    """A gzip file's content (its members one after another, as gzip.decompress reads them) and, where the
    stream breaks off, why. A member read whole with a correct checksum is kept, and so is the start of one
    whose data ends early (a truncated upload: what came before the cut is as written); a member with a
    damaged byte is dropped whole, since its checksum cannot tell where the damage is."""
    try:
        return gzip.decompress(data), None
    except (OSError, EOFError, zlib.error) as exc:
        broken = f"{type(exc).__name__}: {exc}"
    out, pos = [], 0
    while pos < len(data):
        member, part = zlib.decompressobj(wbits=31), []  # one gzip member, its trailer's checksum checked
        try:
            for start in range(pos, len(data), GZIP_CHUNK):
                chunk = data[start:start + GZIP_CHUNK]
                part.append(member.decompress(chunk))
                if member.eof:
                    pos = start + len(chunk) - len(member.unused_data)
                    break
            else:
                out += part  # the data ends inside the member
                break
        except zlib.error:
            break
        out += part
    return b"".join(out), broken


def read_lines(path: Path, source: str, cfg: CurationConfig) -> tuple[pa.Table, list[dict]]:
    """Split a (possibly gzipped) file into candidate lines plus lines rejected before parsing.

    The clean path splits and decodes the whole file in Arrow (_clean_lines); only a file with invalid
    UTF-8, NUL bytes or over-long lines falls back to a per-line pass.
    """
    rejected: list[dict] = []
    size = path.stat().st_size
    if size > cfg.max_file_bytes:
        rejected.append(_quarantine_row(source, 0, "file_too_large",
                                        f"{size} bytes > max_file_bytes {cfg.max_file_bytes}", b"", cfg))
        return _lines_table([], [], source), rejected
    data = path.read_bytes()
    if data[:2] == GZIP_MAGIC:
        content, broken = _gunzip(data)
        # a file that only starts with gzip's two bytes, and holds no gzip stream, is read as lines
        if broken is None or content or path.name.endswith(".gz"):
            if broken is not None:
                rejected.append(_quarantine_row(source, 0, "corrupt_gzip", f"{broken} (the {len(content)} bytes "
                                                "before it are read as lines)", b"", cfg))
            data = content
    if b"\x00" not in data:
        lines = _clean_lines(data, source, cfg, rejected)
        if lines is not None:
            return lines, rejected
    raw_lines = data.split(b"\n")
    numbers: list[int] = []
    texts: list[str] = []
    for i, raw in enumerate(raw_lines, start=1):
        if not raw.strip(BLANK.encode()):
            continue
        if len(raw) > cfg.max_line_bytes:
            rejected.append(_quarantine_row(source, i, "line_too_long",
                                            f"{len(raw)} bytes > max_line_bytes {cfg.max_line_bytes}", raw, cfg))
            continue
        if b"\x00" in raw:
            rejected.append(_quarantine_row(source, i, "nul_byte", "line contains a NUL byte", raw, cfg))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            rejected.append(_quarantine_row(source, i, "invalid_utf8", str(exc), raw, cfg))
            continue
        numbers.append(i)
        texts.append(text)
    # Depth check only on lines with enough brackets to possibly exceed the limit.
    keep_numbers, keep_texts = [], []
    for n, t in zip(numbers, texts):
        if (t.count("{") + t.count("[")) > cfg.max_json_depth and _json_depth_exceeds(t, cfg.max_json_depth):
            rejected.append(_too_deep(source, n, t, cfg))
        else:
            keep_numbers.append(n)
            keep_texts.append(t.rstrip("\r"))
    return _lines_table(keep_numbers, keep_texts, source), rejected


def _clean_lines(data: bytes, source: str, cfg: CurationConfig, rejected: list[dict]) -> pa.Table | None:
    """The lines of a file without NUL bytes, split, decoded and filtered in Arrow; None when a line is
    too long or the file is not valid UTF-8 (read_lines then judges it line by line). Decoded and split
    into a Python string per line, the 617 MB file of a million writes took 5.2-6.0 s with a process
    peak of 3.0-3.4 GB; in Arrow 2.5 s and 2.0 GB. Only lines with more brackets than max_json_depth
    are parsed in Python for their depth."""
    whole = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, pa.array([0, len(data)], pa.int64()).buffers()[1],
                                                                    pa.py_buffer(data)])
    raw = pc.split_pattern(whole, b"\n").flatten()
    if len(raw) and pc.max(pc.binary_length(raw)).as_py() > cfg.max_line_bytes:
        return None
    try:
        text = raw.cast(pa.large_string())
    except pa.ArrowInvalid:
        return None
    del raw, whole
    numbers = pa.array(np.arange(1, len(text) + 1, dtype=np.int64))
    kept = pc.invert(pc.match_substring_regex(text, BLANK_LINE))
    # the depth is parsed only on lines with enough brackets to exceed it (one regular expression: counting
    # each bracket with count_substring took 2.5 s at 1M lines, this 1.0 s)
    brackets = pc.match_substring_regex(text, "^(?:[^{\\[]*[{\\[]){%d}" % (cfg.max_json_depth + 1))
    deep = []
    for i in pc.indices_nonzero(pc.and_(kept, brackets)).to_numpy():
        line = text[int(i)].as_py()
        if _json_depth_exceeds(line, cfg.max_json_depth):
            rejected.append(_too_deep(source, int(i) + 1, line, cfg))
            deep.append(int(i) + 1)
    if deep:
        kept = pc.and_(kept, pc.invert(pc.is_in(numbers, pa.array(deep, pa.int64()))))
    if not pc.all(kept).as_py():
        # the runs of kept lines, sliced and joined: Arrow's filter copies strings one by one (3.2 s for a
        # million lines without their last, empty one; this 0.07 s)
        keep = kept.to_numpy(zero_copy_only=False)
        edges = np.flatnonzero(np.diff(np.concatenate(([False], keep, [False])).astype(np.int8)))
        runs = list(zip(edges[::2].tolist(), edges[1::2].tolist()))
        text = pa.concat_arrays([text.slice(a, b - a) for a, b in runs]) if runs else text.slice(0, 0)
        numbers = pa.array(np.flatnonzero(keep) + 1, pa.int64())
    if pc.any(pc.ends_with(text, "\r")).as_py():
        text = pc.utf8_rtrim(text, "\r")
    return pa.table({"source_file": pa.repeat(pa.scalar(source, pa.string()), len(text)),
                     "line_no": numbers, "text": text})


def _lines_table(numbers: list[int], texts: list[str], source: str) -> pa.Table:
    return pa.table({
        "source_file": pa.array([source] * len(numbers), pa.string()),
        "line_no": pa.array(numbers, pa.int64()),
        "text": pa.array(texts, pa.string()),
    })


def ensure_raw_tables(conn: duckdb.DuckDBPyConnection) -> None:
    for table in (LANDED_FILES, EVENTS, QUARANTINE, CURATOR_DECISIONS):
        ensure_table(conn, table)


def ingested_files(conn: duckdb.DuckDBPyConnection) -> set[str]:
    ensure_raw_tables(conn)
    return {r[0] for r in conn.execute("select source_file from raw.landed_files").fetchall()}


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


FILE_TABLES = ("judged", "judged_dedup")  # the temp tables ingest_files makes for a batch of files
FILE_VIEWS = ("new_events", "quarantined_lines")  # and its views over them (sql/dedupe_events.sql)
BATCH_BYTES = 64 << 20  # bytes of lines judged in one statement (a file with more is judged alone)
LINES_SCHEMA = pa.schema([("source_file", pa.string()), ("line_no", pa.int64()), ("text", pa.large_string())])


def _judge(conn: duckdb.DuckDBPyConnection, lines: pa.Table, query: str, params: dict) -> None:
    """The temp table judged: ``query`` over a batch's ``lines``, before the batch's transaction. DuckDB
    holds a table registered in a transaction until that transaction ends, so the lines would stay
    beside judged's copy of them (0.6 GB for a 1M-line file); a temp table is not stored, and the
    transaction covers what is. The lines are spread over chunks (store.scannable), so that every thread
    judges some of a small batch too."""
    with registered(conn, spread=True, lines=lines):
        conn.execute(f"CREATE OR REPLACE TEMP TABLE judged AS {query}", params)


@contextmanager
def _working_tables(conn: duckdb.DuckDBPyConnection):
    """A batch's working tables are dropped after it, however it ends: they are in memory until dropped
    (kept, they held the next batch's memory and the derivation's after the ingest: a nightly run's one
    process; 0.7 GB after 333k recalls)."""
    try:
        yield
    finally:
        for view in FILE_VIEWS:
            conn.execute(f"DROP VIEW IF EXISTS {view}")
        for temp in FILE_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {temp}")


@contextmanager
def _file_transaction(conn: duckdb.DuckDBPyConnection, rejected: list[dict]):
    """A batch of landed files is one transaction (after _judge): their pre-parse rejects are visible as a
    table."""
    conn.register("pre_rejected", pa.Table.from_pylist(rejected, schema=_quarantine_schema()))
    conn.execute("BEGIN TRANSACTION")
    try:
        yield
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.unregister("pre_rejected")


def _quarantine(conn: duckdb.DuckDBPyConnection, judged: str, bad: str, cfg: CurationConfig) -> None:
    """Pre-parse rejects plus the judged lines matching ``bad`` go to raw.quarantine (credentials
    redacted from the kept text)."""
    pre_text, pre_params = redact_sql("raw_text")
    line_text, _ = redact_sql("left(text, $n)")
    conn.execute(
        f"""INSERT INTO raw.quarantine
        SELECT source_file, line_no, reason, detail, raw_bytes, {pre_text} FROM pre_rejected
        UNION ALL
        SELECT source_file, line_no, split_part(problem, '|', 1),
               substr(problem, length(split_part(problem, '|', 1)) + 2),
               octet_length(encode(text)), {line_text}
        FROM {judged} WHERE {bad}""",
        {"n": cfg.quarantine_raw_chars, **pre_params},
    )


def _count(reports: list[FileReport], counts: dict[str, tuple[int, int, int]], rejected: list[dict]) -> None:
    """Each file's report from ``counts`` (its judged lines by source: new, duplicate, quarantined) and the
    lines ``rejected`` before parsing (quarantined too)."""
    rejected_before = Counter(row["source_file"] for row in rejected)
    for report in reports:
        report.valid_events, report.duplicate_events, quarantined = counts.get(report.source_file, (0, 0, 0))
        report.quarantined_lines = quarantined + rejected_before[report.source_file]


def _record_landed(conn: duckdb.DuckDBPyConnection, paths: list[Path], shas: list[str],
                   reports: list[FileReport]) -> None:
    landed = pa.table({
        "source_file": [r.source_file for r in reports], "sha256": shas, "bytes": [p.stat().st_size for p in paths],
        "lines": [r.lines for r in reports], "valid_events": [r.valid_events for r in reports],
        "duplicate_events": [r.duplicate_events for r in reports],
        "quarantined_lines": [r.quarantined_lines for r in reports]})
    with registered(conn, landed=landed):
        conn.execute(f"INSERT INTO raw.landed_files SELECT {LANDED_FILES.select_list()} FROM landed")


@dataclass
class Landed:
    """A landed file read into lines (read_lines), waiting for its batch."""
    path: Path
    lines: pa.Table | None  # None once its batch holds them
    rejected: list[dict]
    report: FileReport


def _batch_lines(batch: list[Landed]) -> tuple[list[FileReport], pa.Table, list[dict]]:
    """A batch's reports, its lines in one table (with ``seq``: the files in landing order, each file's lines in
    order) and the lines rejected before parsing. The files' own tables are let go: the lines are held once."""
    lines = pa.concat_tables([landed.lines.cast(LINES_SCHEMA) for landed in batch])
    for landed in batch:
        landed.lines = None
    lines = lines.append_column("seq", pa.array(np.arange(lines.num_rows, dtype=np.int64)))
    return [landed.report for landed in batch], lines, [row for landed in batch for row in landed.rejected]


def ingest_files(conn: duckdb.DuckDBPyConnection, batch: list[Landed], lake: Path | None,
                 cfg: CurationConfig) -> list[FileReport]:
    """Validate a batch of files (in landing order) and add their new events: their lines are judged in one
    statement and stored in one transaction, so a file is in the store whole or not at all, as is the batch.
    The split that follows (sql/dedupe_events.sql) ranks the batch's lines by file, then line: the content
    an event id first landed with wins across the batch's files as it did file by file. Judged file by file,
    each file paid the statements' own cost (about 35 ms: planning the validation, compiling its patterns,
    the split, the inserts): 495 files of 20 lines took 18.4 s, the same lines in one file 0.44 s."""
    reports, lines, rejected = _batch_lines(batch)
    shas = [_file_sha256(landed.path) for landed in batch]
    redacted, secret_params = redact_sql("data_json::varchar")
    with _working_tables(conn):
        _judge(conn, lines, sql.load("validate_events").replace("{redacted_data}", redacted),
               {"max_text_chars": cfg.max_text_chars, "earliest": cfg.earliest_timestamp,
                "latest": cfg.latest_timestamp, "id_pattern": ID_PATTERN, **secret_params})
        del lines  # judged holds them
        # Arrow's pool keeps the pages it freed (the lines' 0.6 GB, and their split's before): given back,
        # the ingest of the bench's 1M writes peaks at 2.6-2.9 GB RSS, 3.8-3.9 GB kept (memory_limit 2.5GB)
        pa.default_memory_pool().release_unused()
        conn.execute(sql.load("dedupe_events"))  # judged split by judged_dedup, a temp table too
        with _file_transaction(conn, rejected):
            counts = {source: counted for source, *counted in conn.execute(
                """select j.source_file, count(*) filter (where j.problem is null and d.seq is null),
                          count(*) filter (where d.outcome = 'duplicate'), count(*) filter (where d.outcome = 'quarantine')
                   from judged as j left join judged_dedup as d using (seq) group by j.source_file""").fetchall()}
            conn.execute(f"INSERT INTO raw.events SELECT {EVENTS.select_list()} FROM new_events")
            _quarantine(conn, "quarantined_lines", "problem is not null", cfg)
            _count(reports, counts, rejected)
            if lake is not None:  # its new events, by day, written to the lake after the batches
                conn.execute("INSERT INTO work.lake_pending "
                             "SELECT DISTINCT CAST(ts AS DATE), source_file FROM new_events")
            _record_landed(conn, [landed.path for landed in batch], shas, reports)
    return reports


def _quarantine_schema() -> pa.Schema:
    return pa.schema([("source_file", pa.string()), ("line_no", pa.int64()), ("reason", pa.string()),
                      ("detail", pa.string()), ("raw_bytes", pa.int64()), ("raw_text", pa.string())])


LAKE_READ_ROWS = 65_536  # rows of a part's events fetched at a time
LAKE_SOURCES = "memcurator.sources"  # a part's Parquet metadata: the landing files its events came from (JSON)
LAKE_PENDING = register(Table(
    "work", "lake_pending",
    "One row per (day of event time, landing file) whose events of that day are not in the lake yet: a batch of "
    "landed files adds its rows in its own transaction; the ingest writes them to the lake after its batches, "
    "then lets them go.",
    (C("day", "DATE", "A day of event time (UTC).", False),
     C("source_file", "VARCHAR", "Landing file with new events of that day.", False)),
    key=("day", "source_file"),
))


def write_lake(conn: duckdb.DuckDBPyConnection, lake: Path) -> int:
    """Write the new events of work.lake_pending to the lake: for each day, one Parquet file of the events its
    landing files added to that day, lake/events/date=YYYY-MM-DD/part-<hash of those files' names>.parquet,
    in event_id order, read in pieces, written under a temporary name and renamed into place, with the files'
    names in its metadata. Then the day's folder is tidied (``_tidy_day``), and once every day is written the
    pending rows are let go.

    A run stopped before that leaves its rows pending, and the next writes them with whatever it ingested
    since: a part of the same files gets the same name (written again), one of more files another, and the
    stopped run's part, whose files the new one names, is removed. Returns the number of days written.

    A night's part of a day, not a file for each landed file and day: a fleet whose runs each land a
    transcript made a Parquet file for each transcript and day (732 files of 20 events: 4,325 files for
    14,580 events, most of the ingest's time), and a purge reads every file of the lake. Nor the whole day
    written again: a night whose events fall on every day of the fleet (the bench's churn) rewrote the
    whole lake (the 1M home's nightly ingest 0.7 -> 5.4 s)."""
    ensure_table(conn, LAKE_PENDING)
    pending = conn.execute("SELECT day, list(source_file ORDER BY source_file) FROM work.lake_pending "
                           "GROUP BY day ORDER BY day").fetchall()
    for day, sources in pending:
        folder = lake / "events" / f"date={day.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        for left in folder.glob(".*.tmp"):  # a stopped run's (one process writes the lake at a time)
            left.unlink()
        reader = conn.execute(
            f"SELECT {EVENTS.select_list()} FROM raw.events SEMI JOIN (SELECT source_file FROM work.lake_pending "
            "WHERE day = $day) USING (source_file) WHERE ts >= $day AND ts < $day + INTERVAL 1 DAY ORDER BY event_id",
            {"day": day}).fetch_record_batch(LAKE_READ_ROWS)
        write_part(folder, reader, sources)
        _tidy_day(conn, folder)
    if pending:
        conn.execute("DELETE FROM work.lake_pending")
    return len(pending)


LAKE_MERGE_FILES = 16  # a day's folder with this many files has them merged (_tidy_day)


def write_part(folder: Path, reader: pa.RecordBatchReader, members: list[str]) -> Path | None:
    """A part of ``members`` (their names in its metadata, its name their hash) from the rows of ``reader``,
    its path; none when it has none (its events purged since they landed). A purge writes a part again
    with the same members: the same name."""
    listed = json.dumps(members)  # (a name with a newline in it cannot pass for two)
    name = f"part-{hashlib.sha256(listed.encode()).hexdigest()[:16]}.parquet"
    tmp = folder / f".{name}.tmp"
    rows = 0
    with pq.ParquetWriter(tmp, reader.schema.with_metadata({LAKE_SOURCES: listed})) as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    if rows:
        os.replace(tmp, folder / name)
        return folder / name
    tmp.unlink()
    return None


def part_sources(path: Path) -> list[str] | None:
    """The landing files a lake part's events came from (its metadata); None for a file that names none
    (one for a landed file and day, as the lake was kept before, or one an earlier version's purge wrote again)."""
    metadata = pq.read_schema(path).metadata or {}
    key = LAKE_SOURCES.encode()
    return json.loads(metadata[key]) if key in metadata else None


def _members(path: Path) -> frozenset[str]:
    """What a lake file holds: the landing files its events came from, or, where it names none, itself."""
    sources = part_sources(path)
    return frozenset(sources) if sources is not None else frozenset([f"file:{path.name}"])


def _tidy_day(conn: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Remove the files of a day whose events another file holds (a stopped run's part; the files a stopped
    merge merged), then, when the day has LAKE_MERGE_FILES files, merge them into one part naming all their
    members, written before they are removed: a run stopped between finds them held by it. The largest
    file is kept apart when it holds more rows than the others together, so a day that keeps getting parts
    (late events) has its small ones merged, not its whole history written again each time."""
    files = {path: _members(path) for path in sorted(folder.glob("*.parquet"))}
    held = [path for path, members in files.items()
            if any(other != path and (members < others or (members == others and path.name > other.name))
                   for other, others in files.items())]
    for path in held:
        path.unlink()
        del files[path]
    if len(files) < LAKE_MERGE_FILES:
        return
    rows = {path: pq.read_metadata(path).num_rows for path in files}
    largest = max(files, key=lambda path: (rows[path], path.name))
    merging = [path for path in files if path != largest or rows[largest] <= sum(rows.values()) - rows[largest]]
    members = sorted(set().union(*(files[path] for path in merging)))
    reader = conn.execute("SELECT * FROM read_parquet($files, union_by_name = true, hive_partitioning = false) "
                          "ORDER BY event_id",
                          {"files": [str(path) for path in merging]}).fetch_record_batch(LAKE_READ_ROWS)
    write_part(folder, reader, members)
    for path in merging:
        path.unlink()


def _in_batches(conn: duckdb.DuckDBPyConnection, folder: Path, prefix: str, cfg: CurationConfig,
                ingest_batch: Callable[[list[Landed]], list[FileReport]],
                progress: Callable[[str], None] | None = None) -> IngestReport:
    """The new files of ``folder`` read in landing order and given to ``ingest_batch`` in batches of up to
    BATCH_BYTES of lines (a file with more alone)."""
    report = IngestReport()
    batch: list[Landed] = []
    held = 0  # bytes of the batch's lines

    def flush() -> None:
        report.files.extend(ingest_batch(batch))
        if progress:
            for landed in batch:
                progress(landed.path.name)

    for path in discover(folder, ingested_files(conn), prefix):
        source = source_name(folder, path, prefix)
        lines, rejected = read_lines(path, source, cfg)
        if batch and held + lines.nbytes > BATCH_BYTES:
            flush()
            batch, held = [], 0
        batch.append(Landed(path, lines, rejected, FileReport(source, lines=lines.num_rows + len(rejected))))
        held += lines.nbytes
        del lines
    if batch:
        flush()
    return report


def ingest_landing(conn: duckdb.DuckDBPyConnection, landing: Path, lake: Path | None,
                   cfg: CurationConfig, progress: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest the landing's new files, in batches of up to BATCH_BYTES of lines (ingest_files), write the lake
    parts of their new events (write_lake), then checkpoint when there were any: the events are in the
    store's file before a derivation in the same connection begins (the Dagster job's steps share one).
    Otherwise they stayed in the write-ahead log until a derivation step's commit passed DuckDB's checkpoint
    threshold, and that step paid for writing them (lab, the job's night on the bench's 1M home:
    core.entries' step 0.72-0.74 s before, 0.45-0.60 s after, and the ingest's no longer; docs/curation.md)."""
    if lake is not None:
        ensure_table(conn, LAKE_PENDING)
    report = _in_batches(conn, landing, "", cfg, lambda batch: ingest_files(conn, batch, lake, cfg), progress)
    # the batches' new events (and any a run stopped before its lake left pending) written to the lake
    report.lake_days = write_lake(conn, lake) if lake is not None else 0
    if report.files or report.lake_days:
        conn.execute("CHECKPOINT")
    return report


def ingest_decisions(conn: duckdb.DuckDBPyConnection, folder: Path, cfg: CurationConfig) -> IngestReport:
    """Curator decisions: their own input folder, validated like events, never mixed into the log; in batches
    of files as the events are (a decision is a file of its own: decisions.record)."""
    ensure_raw_tables(conn)
    return _in_batches(conn, folder, DECISIONS_PREFIX, cfg, lambda batch: decision_files(conn, batch, cfg))


def decision_files(conn: duckdb.DuckDBPyConnection, batch: list[Landed], cfg: CurationConfig) -> list[FileReport]:
    """Validate a batch of decision files and add their new decisions, in one transaction. A decision id
    already stored, or met earlier in the batch (files in landing order, then lines), is a duplicate and
    adds nothing (and is counted as one). Judged file by file, 200 decisions (200 files) took 3.6 s to ingest,
    in a batch 0.24-0.27 s."""
    reports, lines, rejected = _batch_lines(batch)
    shas = [_file_sha256(landed.path) for landed in batch]
    with _working_tables(conn):
        _judge(conn, lines, sql.load("validate_decisions"), {"id_pattern": ID_PATTERN})
        del lines
        with _file_transaction(conn, rejected):
            conn.execute("""create or replace temp table judged_dedup as
                select seq, source_file, decision_id not in (select decision_id from raw.curator_decisions)
                       and row_number() over (partition by decision_id order by seq) = 1 as new
                from judged where problem is null""")
            conn.execute(f"""INSERT INTO raw.curator_decisions
                SELECT {CURATOR_DECISIONS.select_list("j")} FROM judged j inner join judged_dedup d using (seq)
                WHERE d.new""")
            counts = {source: counted for source, *counted in conn.execute(
                """select j.source_file, count(*) filter (where d.new), count(*) filter (where not d.new),
                          count(*) filter (where j.problem is not null)
                   from judged as j left join judged_dedup as d using (seq) group by j.source_file""").fetchall()}
            _quarantine(conn, "judged", "problem IS NOT NULL", cfg)
            _count(reports, counts, rejected)
            _record_landed(conn, [landed.path for landed in batch], shas, reports)
    return reports
