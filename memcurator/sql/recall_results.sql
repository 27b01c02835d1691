-- One row per (recall event, returned entry) of the recalls of the temp table refresh_events (every
-- recall with ts < $as_of, or those not read yet: entries.refresh_per_event).
with recalls as (
    select
        event_id, namespace, ts, run_id, agent_id,
        data::json ->> '$.query' as query,
        from_json(data::json -> '$.results', '[{"entry_id":"VARCHAR","rank":"INTEGER","injected":"BOOLEAN"}]') as results
    from raw.events as e
    semi join refresh_events as r on r.event_row = e.rowid
),

returned as (
    select event_id, namespace, ts, run_id, agent_id, query, unnest(results) as r
    from recalls
)

select
    event_id, namespace, ts, run_id, agent_id, query,
    r.entry_id as entry_id,
    r.rank as rank,
    coalesce(r.injected, false) as injected
from returned
qualify row_number() over (partition by event_id, r.entry_id order by r.rank) = 1
order by ts, event_id, rank
