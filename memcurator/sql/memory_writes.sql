-- One row per memory.write event of the temp table refresh_events (the builder's: every write with
-- ts < $as_of, or those not read yet; entries.refresh_per_event), payload flattened.
-- The payload is parsed once: every field comes from one multi-path extraction. Only the payloads of
-- those events are read: a correlated "not exists" read every payload of the log before the anti join
-- (0.5-0.9 s of a 1 %-churn night at 1M writes).
with writes as materialized (
    select
        event_id, namespace, ts, run_id, agent_id, actor,
        json_extract_string(data, ['$.text', '$.entry_id', '$.class', '$.importance', '$.trust', '$.generality',
                                   '$.supersedes', '$.reason', '$.valid_from', '$.valid_until']) as v,
        json_extract(data, '$.tags') as tags_json
    from raw.events
    semi join refresh_events using (event_id)
),

texts as (
    select *, v[1] as text from writes
),

trimmed as (
    select
        *,
        -- trim() strips the Unicode space separators (category Zs) at both ends but reads the whole
        -- text to do so (2.3 s of this step at 1M texts): only a text that starts or ends with one is trimmed
        case when list_bool_or(list_transform(
                      [' ', chr(160), chr(5760), chr(8192), chr(8193), chr(8194), chr(8195), chr(8196), chr(8197),
                       chr(8198), chr(8199), chr(8200), chr(8201), chr(8202), chr(8239), chr(8287), chr(12288)],
                      c -> starts_with(text, c) or ends_with(text, c)))
             then trim(text) else text end as trimmed_text
    from texts
),

flat as (
    select
        * exclude (trimmed_text),
        -- whitespace runs collapse to one space; the regex runs only where there is a run to collapse
        -- (two spaces, or a tab, newline, form feed or carriage return: what RE2's \s matches besides
        -- the space): on long texts the regex was most of this step's time
        lower(case when contains(text, '  ') or contains(text, chr(9)) or contains(text, chr(10))
                        or contains(text, chr(12)) or contains(text, chr(13))
                   then regexp_replace(trimmed_text, '\s+', ' ', 'g')
                   else trimmed_text end) as norm_text
    from trimmed
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
    norm_text,
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
