-- One row per memory.write event of the temp table refresh_events (the builder's: every write with
-- ts < $as_of, or those not read yet; entries.refresh_per_event), payload flattened. The normalised
-- text is not stored (entries.sql derives it for the current versions): with it, writing 1M flattened
-- writes took 4.8-6.7 s, without it 1.9 s (2.5 GB memory limit).
-- The payload is parsed once: every field comes from one multi-path extraction. Only the payloads of
-- those events are read: a correlated "not exists" read every payload of the log before the anti join
-- (0.5-0.9 s of a 1 %-churn night at 1M writes). They are found by row id (refresh_events.event_row,
-- found in the same transaction): a night's new events are rows the files ingested since appended, so
-- only their row groups are read (joined by event id, DuckDB read every payload of the log unless the
-- new ids sorted apart from the old: 0.22-0.47 s at 1M writes, by row id 0.01 s).
with writes as materialized (
    select
        event_id, namespace, ts, run_id, agent_id, actor,
        json_extract_string(data, ['$.text', '$.entry_id', '$.class', '$.importance', '$.trust', '$.generality',
                                   '$.supersedes', '$.reason', '$.valid_from', '$.valid_until']) as v,
        json_extract(data, '$.tags') as tags_json
    from raw.events as e
    semi join refresh_events as r on r.event_row = e.rowid
),

texts as (
    select *, v[1] as text from writes
),

flat as (
    select
        *,
-- include norm_text
        as norm_text
    from texts
)

select
    event_id,
    namespace,
    coalesce(v[2], 'm_' || left(sha256(namespace || chr(31) || norm_text), 16)) as entry_id,
    ts,
    run_id,
    agent_id,
    actor,
    text,
    v[3] as class,
    try_cast(v[4] as double) as importance,
    coalesce(try_cast(v[5] as double), 1.0) as trust,
    try_cast(v[6] as double) as generality,
    v[7] as supersedes,
    v[8] as supersede_reason,
    (try_cast(v[9] as timestamptz) at time zone 'UTC') as valid_from,
    (try_cast(v[10] as timestamptz) at time zone 'UTC') as valid_until,
    coalesce(list_sort(list_distinct(from_json(tags_json, '["VARCHAR"]'))), []::varchar[]) as tags
from flat
