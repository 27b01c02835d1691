"""One home for all state: ``MEMCURATOR_HOME`` (default ``./.memcurator``).

Layout::

    landing/      transcript files as landed (append-only, never edited)
    decisions/    curator decisions, one JSONL file per day (append-only)
    lake/events/  valid events as Parquet, by day of event time: a part for each night's events of a day
    store.duckdb  the one DuckDB file, written only by the pipeline
    published/    read-only snapshot of the store for analysts and recall
    dagster/      DAGSTER_HOME (run history, schedules)
    truth/        ground truth written by the demo generator (never ingested)
    settings.toml the curation settings the nights run with, where they are not the defaults (optional)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = ".memcurator"
HOME_ENV = "MEMCURATOR_HOME"
# Runs that open the store carry this tag (STORE_TAG: the nightly job, the reproducibility check, the
# shard split and merge), and the home's Dagster instance runs one of them at a time: the store has one
# writer, and a run launched beside another (the landing sensor's during a long night, a backfill of
# several nights) failed on its lock. The instance queues it instead.
STORE_TAG = ("memcurator/store", "writer")
DAGSTER_SETTINGS = f"""telemetry:
  enabled: false
nux:
  enabled: false
concurrency:
  runs:
    tag_concurrency_limits:
      - key: {STORE_TAG[0]}
        limit: 1
"""
# what ensure wrote before: a home that still has it gets the settings above (one edited by hand is kept)
EARLIER_DAGSTER_SETTINGS = ("telemetry:\n  enabled: false\nnux:\n  enabled: false\n",)


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def from_env(cls, explicit: str | os.PathLike | None = None) -> "Home":
        raw = explicit if explicit is not None else os.environ.get(HOME_ENV, DEFAULT_HOME)
        return cls(Path(raw).expanduser().resolve())

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def decisions(self) -> Path:
        return self.root / "decisions"

    @property
    def lake(self) -> Path:
        return self.root / "lake"

    @property
    def store(self) -> Path:
        return self.root / "store.duckdb"

    @property
    def published(self) -> Path:
        return self.root / "published" / "store.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def truth(self) -> Path:
        return self.root / "truth"

    @property
    def settings(self) -> Path:
        return self.root / "settings.toml"

    def ensure(self) -> "Home":
        for folder in (self.landing, self.decisions, self.lake, self.truth, self.published.parent):
            folder.mkdir(parents=True, exist_ok=True)
        dagster_home = self.dagster_home
        dagster_home.mkdir(parents=True, exist_ok=True)
        settings = dagster_home / "dagster.yaml"
        if not settings.exists() or settings.read_text() in EARLIER_DAGSTER_SETTINGS:
            settings.write_text(DAGSTER_SETTINGS)
        return self
