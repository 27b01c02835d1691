-- One row per (recall event, returned entry) with ts < $as_of. Recalls already in core.recall_results
-- are not parsed again (the builder keeps the table only when this query built it).
with recalls as (
    select
        event_id, namespace, ts, run_id, agent_id,
        data::json ->> '$.query' as query,
        from_json(data::json -> '$.results', '[{"entry_id":"VARCHAR","rank":"INTEGER","injected":"BOOLEAN"}]') as results
    from raw.events
    anti join core.recall_results using (event_id)
    where type = 'memory.recall' and ts < $as_of
),

returned as (
    select event_id, namespace, ts, run_id, agent_id, query, unnest(results) as r
    from recalls
)

select
    event_id, namespace, ts, run_id, agent_id, query,
    r.entry_id as entry_id,
    r.rank as rank,
    coalesce(r.injected, false) as injected,
    $as_of as as_of
from returned
qualify row_number() over (partition by event_id, r.entry_id order by r.rank) = 1
order by ts, event_id, rank
