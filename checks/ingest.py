"""Checks on the raw layer: uniqueness and conservation of every landed line."""

import dagster as dg

from checks._sql import schema_check, violation_check
from memcurator import ingest
from memcurator.tables import CURATOR_DECISIONS, EVENTS
from pipelines.resources import StoreResource

event_ids_are_unique = violation_check(
    ["raw", "events"], "event_ids_are_unique",
    "No event id appears twice in raw.events.",
    "select count(*) from (select event_id from raw.events group by 1 having count(*) > 1)",
)

every_landed_line_is_accounted_for = violation_check(
    ["raw", "events"], "every_landed_line_is_accounted_for",
    "Conservation: for every landed file, lines = new events + duplicates + quarantined lines, and "
    "the counts match the rows in raw.events and raw.quarantine.",
    """
    with events_per_file as (
        select source_file, count(*) as n from raw.events group by 1
    ), quarantine_per_file as (
        select source_file, count(*) as n from raw.quarantine group by 1
    )
    select count(*)
    from raw.landed_files as f
    left join events_per_file as e using (source_file)
    left join quarantine_per_file as q using (source_file)
    where f.lines <> f.valid_events + f.duplicate_events + f.quarantined_lines
       or (f.source_file not like 'decisions/%' and coalesce(e.n, 0) <> f.valid_events)
       or coalesce(q.n, 0) <> f.quarantined_lines
    """,
)

quarantine_share_is_small = violation_check(
    ["raw", "events"], "quarantine_share_is_small",
    "Soft signal: under 5 % of landed lines are quarantined (a writer is probably broken above it).",
    "select case when sum(quarantined_lines) > 0.05 * greatest(sum(lines), 1) then 1 else 0 end from raw.landed_files",
    blocking=False,
)

decision_ids_are_unique = violation_check(
    ["raw", "curator_decisions"], "decision_ids_are_unique",
    "No curator decision id appears twice.",
    "select count(*) from (select decision_id from raw.curator_decisions group by 1 having count(*) > 1)",
)

events_schema = schema_check(EVENTS)
decisions_schema = schema_check(CURATOR_DECISIONS)


@dg.asset_check(asset=dg.AssetKey(["raw", "events"]), name="landed_files_unchanged_since_ingest", blocking=False,
                description="Every landed file is as the ingest read it (its size): a file edited or still being "
                            "copied when a run read it holds lines no table has. `memcurator status` names them.")
def landed_files_unchanged_since_ingest(store: StoreResource) -> dg.AssetCheckResult:
    # the count only: a file's name can hold a namespace or a user, and a purge cannot reach Dagster's run history
    with store.writer() as conn:
        changed = ingest.changed_since_ingest(conn, store.paths.landing, store.paths.decisions)
    return dg.AssetCheckResult(passed=not changed, severity=dg.AssetCheckSeverity.WARN,
                               metadata={"files": dg.MetadataValue.int(len(changed))})


@dg.asset_check(asset=dg.AssetKey(["raw", "events"]), name="every_landing_file_is_read", blocking=False,
                description="Every file in the landing folder is one the ingest reads (named "
                            f"{', '.join('*' + suffix for suffix in ingest.TRANSCRIPT_SUFFIXES)}): a file copied in "
                            "under another name sits there unread. `memcurator status` names them.")
def every_landing_file_is_read(store: StoreResource) -> dg.AssetCheckResult:
    unread = ingest.unread_landing_files(store.paths.landing)  # (the count only, as above)
    return dg.AssetCheckResult(passed=not unread, severity=dg.AssetCheckSeverity.WARN,
                               metadata={"files": dg.MetadataValue.int(len(unread))})
