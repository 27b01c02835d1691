-- One row per (namespace, entry_id): the latest write is the current version; provenance from all.
-- $all = false folds only the entries in the temp table entry_scope (the builder's refold of the
-- entries whose writes changed, with every entry that supersedes one of them). $all = true folds the
-- namespaces with hash(namespace) % $passes = $part (a full fold runs in passes to bound its memory).
-- (union all and a left join rather than "$all or exists (...)": DuckDB planned that as a mark join
-- costing 8 s of a 21 s full fold at 1M entries)
-- The current version is found by an aggregate over the narrow columns (arg_max of the write's row id by
-- (ts, event_id)) and the wide rows are read once, streamed through a join on that row id: a window
-- over the wide rows, and a final sort of them, were 13 of 21 CPU seconds at 1M entries, and a CTE of
-- the wide current versions (read twice, so DuckDB materialises it) ran out of the 3 GB memory limit
-- at 10M entries (at 1M it needed 1 GB; this needs 420 MB). Rows are not sorted (a refold appends
-- anyway); readers order by (namespace, entry_id).
-- The current versions of the entries a night refolds are mostly its new writes, at the end of
-- core.memory_writes: read by row id, only its last row groups' texts are read (store.rows_by_key; read
-- with every write of the entries, the texts of all writes were: 0.57 s of a 1 %-churn night at 1M
-- entries, half of it new versions of stored ones, first read in the process; 0.24 s).
with writes as not materialized (
    select rowid as write_row, event_id, namespace, entry_id, ts, run_id, agent_id, supersedes, supersede_reason
    from core.memory_writes where $all and hash(namespace) % $passes = $part
    union all
    select w.rowid, w.event_id, w.namespace, w.entry_id, w.ts, w.run_id, w.agent_id, w.supersedes, w.supersede_reason
    from core.memory_writes as w semi join entry_scope as x using (namespace, entry_id) where not $all
),

provenance as (
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
),

successor as (  -- from the current versions that supersede one, narrow columns only
    select
        w.namespace,
        w.supersedes as entry_id,
        w.entry_id as superseded_by,
        w.supersede_reason as superseded_reason,
        w.ts as superseded_at
    from writes as w semi join provenance as p on p.last_row = w.write_row
    where w.supersedes is not null
    qualify row_number() over (partition by w.namespace, w.supersedes order by w.ts desc, w.event_id desc) = 1
)

select
    c.namespace,
    c.entry_id,
    c.text,
-- include norm_text
    as norm_text,
    c.class,
    c.importance,
    c.trust,
    c.generality,
    c.tags,
    c.valid_from,
    c.valid_until,
    c.supersedes,
    c.supersede_reason,
    s.superseded_by,
    s.superseded_reason,
    s.superseded_at,
    p.first_written_at,
    p.last_written_at,
    p.version_count,
    p.distinct_runs,
    p.distinct_agents,
    p.writer_agents,
    c.event_id as last_event_id
from (
    select rowid as write_row, * from core.memory_writes
    where hash(namespace) % $passes = $part and rowid in (select last_row from provenance)
) as c
inner join provenance as p on p.last_row = c.write_row
left join successor as s on s.namespace = c.namespace and s.entry_id = c.entry_id
left join entry_refold as r on r.namespace = c.namespace and r.entry_id = c.entry_id
where $all or r.entry_id is not null
