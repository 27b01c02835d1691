-- Validate curator decision lines (docs/events.md, "Curator decisions").
-- Input: table `lines` (as sql/validate_events.sql's). Output: one row per line, `problem` null when valid.
-- Parameter: $id_pattern.
with doc as (
    select source_file, line_no, seq, text, json_valid(text) as is_json,
        case when json_valid(text) then text::json end as j
    from lines
),

fields as (
    select
        *,
        json_type(j) as root_t,
        j ->> '$.id' as decision_id,
        json_type(j, '$.id') as id_t,
        try_cast(j ->> '$.ts' as timestamptz) as ts_tz,
        j ->> '$.namespace' as namespace,
        json_type(j, '$.namespace') as ns_t,
        j ->> '$.action' as action,
        j ->> '$.target_kind' as target_kind,
        j ->> '$.target_id' as target_id,
        json_type(j, '$.target_id') as target_t,
        j ->> '$.reason' as reason,
        json_type(j, '$.reason') as reason_t,
        coalesce(j ->> '$.curator', 'curator') as curator,
        coalesce((j -> '$.data')::varchar, '{}') as data
    from doc
)

select
    decision_id,
    (ts_tz at time zone 'UTC') as ts,
    namespace, action, target_kind, target_id, reason, curator, data, source_file, line_no, seq, text,
    case
        when not is_json then 'invalid_json|line is not valid JSON'
        when root_t <> 'OBJECT' then 'not_an_object|top level must be a JSON object'
        when id_t is distinct from 'VARCHAR' or not regexp_full_match(decision_id, $id_pattern) then 'invalid_id|id'
        when ts_tz is null then 'invalid_timestamp|ts'
        when ns_t is distinct from 'VARCHAR' or not regexp_full_match(namespace, $id_pattern) then 'invalid_id|namespace'
        when target_kind not in ('cluster', 'conflict', 'link') or target_kind is null then 'invalid_value|target_kind must be cluster, conflict or link'
        when target_kind = 'cluster' and action not in ('approve', 'reject', 'unmerge') then 'invalid_value|cluster action must be approve, reject or unmerge'
        when target_kind = 'conflict' and action not in ('replace', 'narrow', 'retire', 'dismiss') then 'invalid_value|conflict action must be replace, narrow, retire or dismiss'
        when target_kind = 'link' and action <> 'confirm' then 'invalid_value|link action must be confirm'
        when target_kind = 'link' and (json_type(j, '$.data.supersedes') is distinct from 'VARCHAR'
                                       or not regexp_full_match(j ->> '$.data.supersedes', $id_pattern))
            then 'missing_field|data.supersedes (the entry the target replaces)'
        when target_t is distinct from 'VARCHAR' or not regexp_full_match(target_id, $id_pattern) then 'invalid_id|target_id'
        when reason_t is distinct from 'VARCHAR' or length(trim(reason)) = 0 then 'missing_field|reason'
    end as problem
from fields
