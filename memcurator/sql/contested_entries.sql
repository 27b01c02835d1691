-- The curator's worklist: one row per entry in a live conflict (open, and both sides still
-- recallable: a superseded, expired or archived side settles it); `memcurator review conflicts`
-- reads it most recalled first.
-- With $all false, only the entries in the temp table stage_scope (changes.refresh_entries: those whose
-- conflicts, state or usage changed, and the other sides of their conflicts): their conflicts are read,
-- the states of both sides of those, and their own usage by the scope's hashes. No text: the readers
-- join it from core.entries (read for the worklist's entries, the texts spread through core.entries
-- read that table's text column whole, in a night whose stages before had not).
with scoped_conflicts as not materialized (
    -- scoped pairs core.contradictions
),

open_pairs as materialized (
    select * from scoped_conflicts where status = 'open'
),

-- include open_pair_sides

live as (
    select k.*
    from open_pairs as k
    inner join side_states as la on la.namespace = k.namespace and la.entry_id = k.entry_a
    inner join side_states as lb on lb.namespace = k.namespace and lb.entry_id = k.entry_b
    where la.state in ('active', 'reverify', 'held', 'case') and lb.state in ('active', 'reverify', 'held', 'case')
),

open_conflicts as (
    select namespace, conflict_id, kind, confidence, likely_current, entry_a as entry_id from live
    union all
    select namespace, conflict_id, kind, confidence, likely_current, entry_b from live
),

scoped_usage as not materialized (
    select namespace, entry_id, recall_count from core.entry_usage where $all
    union all
    select namespace, entry_id, recall_count from core.entry_usage semi join stage_hashes using (entry_hash)
    where not $all
)

select
    o.namespace,
    o.entry_id,
    count(*) as open_conflicts,
    list(o.conflict_id order by o.conflict_id) as conflict_ids,
    list(distinct o.kind order by o.kind) as kinds,
    max(o.confidence) as max_confidence,
    coalesce(max(u.recall_count), 0) as recall_count,
    bool_and(o.likely_current = o.entry_id) as is_likely_current
from open_conflicts as o
left join scoped_usage as u using (namespace, entry_id)
group by o.namespace, o.entry_id
