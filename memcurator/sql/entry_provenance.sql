-- The provenance of each entry from all its writes (one row per (namespace, entry_id)), and the row id of
-- its current version (the latest write, by (ts, event_id)): core.entries' fold (sql/entries.sql) reads
-- it from the temp table fold_provenance. $all = false: the entries in the temp table entry_refold (those
-- whose writes changed).
-- $all = true: the namespaces with hash(namespace) % $passes = $part (a full fold aggregates in passes to
-- bound its memory: the lists and distinct counts per entry do not spill; entries.FOLD_PASS_WRITES).
-- (union all and a left join rather than "$all or exists (...)": DuckDB planned that as a mark join
-- costing 8 s of a 21 s full fold at 1M entries)
with refolded_writes as materialized (
    -- the writes of the entries in entry_refold, read by their hashes (with every_hash, the filter true of
    -- every hash: DuckDB skips the other writes in the scan) and matched by key below (by key, every write's
    -- strings were read: 52 ms of scan in a 1 %-churn night at 1M entries)
    select rowid as write_row, event_id, namespace, entry_id, ts, run_id, agent_id from core.memory_writes
    semi join (select entry_hash_of(namespace, entry_id) as entry_hash from entry_refold
               where every_hash(entry_hash_of(namespace, entry_id))) using (entry_hash)
    where not $all
),

writes as (
    select rowid as write_row, event_id, namespace, entry_id, ts, run_id, agent_id
    from core.memory_writes where $all and hash(namespace) % $passes = $part
    union all
    select * from refolded_writes semi join entry_refold using (namespace, entry_id)
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
