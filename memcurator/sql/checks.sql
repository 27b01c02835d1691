-- One row per memory.check event with ts < $as_of. Checks already in core.checks are not parsed again
-- (the builder keeps the table only when this query built it).
select
    event_id,
    namespace,
    data::json ->> '$.entry_id' as entry_id,
    ts,
    data::json ->> '$.status' as status,
    case when data::json ->> '$.status' = 'fail' then data::json ->> '$.error_class' end as error_class,
    actor,
    data::json ->> '$.corrected_by' as corrected_by,
    $as_of as as_of
from raw.events
anti join core.checks using (event_id)
where type = 'memory.check' and ts < $as_of
order by ts, event_id
