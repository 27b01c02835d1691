-- One row per memory.check event of the temp table refresh_events (every check with ts < $as_of, or
-- those not read yet: entries.refresh_per_event).
select
    event_id,
    namespace,
    data::json ->> '$.entry_id' as entry_id,
    ts,
    data::json ->> '$.status' as status,
    case when data::json ->> '$.status' = 'fail' then data::json ->> '$.error_class' end as error_class,
    actor,
    data::json ->> '$.corrected_by' as corrected_by
from raw.events as e
semi join refresh_events as r on r.event_row = e.rowid
order by ts, event_id
