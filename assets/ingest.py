"""Ingest stage: the landing folder and the curator-decision folder become raw tables."""


import dagster as dg

from assets._tables import OWNERS, materialized, table_metadata
from memcurator import ingest
from memcurator.tables import CURATOR_DECISIONS, EVENTS
from pipelines.resources import CurationResource, StoreResource


@dg.asset(
    key=["raw", "events"],
    group_name="ingest",
    kinds={"duckdb", "parquet"},
    owners=OWNERS,
    metadata=table_metadata(EVENTS),
)
def raw_events(context: dg.AssetExecutionContext, store: StoreResource, curation: CurationResource) -> dg.MaterializeResult:
    """One row per valid event in the log (unique event_id).

    Picks up new transcript files from the landing folder, validates every line, appends the new
    events here and to the Parquet lake (lake/events/date=.../part-....parquet: a part for each day of
    event time the night added to), and sends every invalid line to raw.quarantine with its reason.
    Re-landing a file or an event adds nothing.
    """
    home = store.paths
    with store.writer() as conn:
        report = ingest.ingest_landing(conn, home.landing, home.lake, curation.config(),
                                       progress=lambda name: context.log.debug(f"ingested {name}"))
        quarantined_total = conn.execute("select count(*) from raw.quarantine").fetchone()[0]
        return materialized(
            conn, EVENTS,
            files_ingested=len(report.files),
            new_events=report.valid_events,
            duplicate_events=report.duplicate_events,
            quarantined_lines=report.quarantined_lines,
            quarantined_total=quarantined_total,
            lake_days_written=report.lake_days,
        )


@dg.asset(
    key=["raw", "curator_decisions"],
    group_name="ingest",
    kinds={"duckdb"},
    owners=OWNERS,
    metadata=table_metadata(CURATOR_DECISIONS),
)
def raw_curator_decisions(store: StoreResource, curation: CurationResource) -> dg.MaterializeResult:
    """One row per valid curator decision (approve/reject/unmerge a cluster, resolve a conflict).

    Curator decisions are their own input (the decisions folder, written by `memcurator review`),
    never mixed into the transcript log.
    """
    home = store.paths
    with store.writer() as conn:
        report = ingest.ingest_decisions(conn, home.decisions, curation.config())
        return materialized(conn, CURATOR_DECISIONS, new_decisions=report.valid_events,
                            quarantined_lines=report.quarantined_lines)
