-- One row per memory.write event with ts < $as_of, payload flattened.
with writes as (
    select
        event_id, namespace, ts, run_id, agent_id, actor,
        data::json as d
    from raw.events
    where type = 'memory.write' and ts < $as_of
),

flat as (
    select
        *,
        d ->> '$.text' as text,
        lower(regexp_replace(trim(d ->> '$.text'), '\s+', ' ', 'g')) as norm_text
    from writes
)

select
    event_id,
    namespace,
    coalesce(d ->> '$.entry_id', 'm_' || left(sha256(namespace || chr(31) || norm_text), 16)) as entry_id,
    ts,
    run_id,
    agent_id,
    actor,
    text,
    norm_text,
    d ->> '$.class' as class,
    try_cast(d ->> '$.importance' as double) as importance,
    coalesce(try_cast(d ->> '$.trust' as double), 1.0) as trust,
    try_cast(d ->> '$.generality' as double) as generality,
    d ->> '$.supersedes' as supersedes,
    d ->> '$.reason' as supersede_reason,
    (try_cast(d ->> '$.valid_from' as timestamptz) at time zone 'UTC') as valid_from,
    (try_cast(d ->> '$.valid_until' as timestamptz) at time zone 'UTC') as valid_until,
    coalesce(list_sort(list_distinct(from_json(d -> '$.tags', '["VARCHAR"]'))), []::varchar[]) as tags,
    $as_of as as_of
from flat
