-- One row per (namespace, entry_id): the latest write is the current version; provenance from all.
-- The temp table fold_provenance holds the provenance of the entries folded, with the row id of each one's
-- current version (sql/entry_provenance.sql: a full fold aggregates it in passes of namespaces, to bound
-- its memory, or holds the entries a night refolds); this reads the wide rows once, by those row ids. Per
-- pass, the wide rows were read again: at 10M entries (five passes) the fold read every text five times.
-- The current version is read by row id, streamed through a join on it: a window over the wide rows,
-- and a final sort of them, were 13 of 21 CPU seconds at 1M entries, and a CTE of the wide current
-- versions (read twice, so DuckDB materialises it) ran out of the 3 GB memory limit at 10M entries (at
-- 1M it needed 1 GB). Rows are not sorted (a refold appends anyway); readers order by (namespace, entry_id).
-- The current versions of the entries a night refolds are its new writes (but one dated before the
-- current version), at the end of core.memory_writes: read by row id, only its last row groups' texts are
-- read (store.rows_by_key; read with every write of the entries, the texts of all writes were: 0.57 s of a
-- 1 %-churn night at 1M entries, half of it new versions of stored ones, first read in the process; 0.24 s).
-- Who supersedes an entry is not folded into it (core.entry_successors, a view): an entry whose own writes
-- did not change keeps its row when a new write supersedes it. Folded in, such an entry was refolded and its
-- current version, an old write anywhere in core.memory_writes, read: with a correction in nine writes,
-- the texts of most of its row groups (0.3 s of a 1 %-churn night at 1M entries, 5.7 s at 10M).
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
