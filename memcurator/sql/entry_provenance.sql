-- The provenance of each entry from all its writes (one row per (namespace, entry_id)), and the row id of
-- its current version (the latest write, by (ts, event_id)): core.entries' fold (sql/entries.sql) reads
-- it from the temp table fold_provenance. $all = false: the entries in the temp table entry_refold (those
-- whose writes changed).
-- $all = true: the namespaces with hash(namespace) % $passes = $part (a full fold aggregates in passes to
-- bound its memory: the lists and distinct counts per entry do not spill; entries.FOLD_PASS_WRITES).
-- (union all and a left join rather than "$all or exists (...)": DuckDB planned that as a mark join
-- costing 8 s of a 21 s full fold at 1M entries)
with writes as (
    select rowid as write_row, event_id, namespace, entry_id, ts, run_id, agent_id
    from core.memory_writes where $all and hash(namespace) % $passes = $part
    union all
    select w.rowid, w.event_id, w.namespace, w.entry_id, w.ts, w.run_id, w.agent_id
    from core.memory_writes as w semi join entry_refold as x using (namespace, entry_id) where not $all
)

select
    namespace,
    entry_id,
    arg_max(write_row, (ts, event_id)) as last_row,
    min(ts) as first_written_at,
    max(ts) as last_written_at,
    count(*) as version_count,
    count(distinct run_id) as distinct_runs,
    count(distinct agent_id) as distinct_agents,
    coalesce(list_sort(list_distinct(list(agent_id) filter (where agent_id is not null))), []::varchar[]) as writer_agents
from writes
group by namespace, entry_id
