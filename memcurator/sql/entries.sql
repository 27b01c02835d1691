-- One row per (namespace, entry_id): the latest write is the current version; provenance from all.
-- The temp table fold_provenance holds the provenance of the entries folded, with the row id of each one's
-- current version (sql/entry_provenance.sql: a full fold aggregates it in passes of namespaces, to bound
-- its memory); this reads the wide rows once, by those row ids. ($all = false: the builder keeps only the
-- entries of the temp table entry_refold.) Per pass, the wide rows were read again: at 10M entries (five
-- passes) the fold read every text five times.
-- The current version is read by row id, streamed through a join on it: a window over the wide rows,
-- and a final sort of them, were 13 of 21 CPU seconds at 1M entries, and a CTE of the wide current
-- versions (read twice, so DuckDB materialises it) ran out of the 3 GB memory limit at 10M entries (at
-- 1M it needed 1 GB). Rows are not sorted (a refold appends anyway); readers order by (namespace, entry_id).
-- The current versions of the entries a night refolds are mostly its new writes, at the end of
-- core.memory_writes: read by row id, only its last row groups' texts are read (store.rows_by_key; read
-- with every write of the entries, the texts of all writes were: 0.57 s of a 1 %-churn night at 1M
-- entries, half of it new versions of stored ones, first read in the process; 0.24 s).
with successor as (  -- from the current versions that supersede one, narrow columns only
    select
        w.namespace,
        w.supersedes as entry_id,
        w.entry_id as superseded_by,
        w.supersede_reason as superseded_reason,
        w.ts as superseded_at
    from core.memory_writes as w
    where w.supersedes is not null and w.rowid in (select last_row from fold_provenance)
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
    select rowid as write_row, * from core.memory_writes where rowid in (select last_row from fold_provenance)
) as c
inner join fold_provenance as p on p.last_row = c.write_row
left join successor as s on s.namespace = c.namespace and s.entry_id = c.entry_id
left join entry_refold as r on r.namespace = c.namespace and r.entry_id = c.entry_id
where $all or r.entry_id is not null
