-- The curator's worklist: one row per entry in a live conflict (open, and both sides still
-- recallable: a superseded, expired or archived side settles it), most recalled first.
with live as (
    select k.*
    from core.contradictions as k
    inner join core.entry_lifecycle as la on la.namespace = k.namespace and la.entry_id = k.entry_a
    inner join core.entry_lifecycle as lb on lb.namespace = k.namespace and lb.entry_id = k.entry_b
    where k.status = 'open'
      and la.state in ('active', 'reverify', 'held', 'case') and lb.state in ('active', 'reverify', 'held', 'case')
),

open_conflicts as (
    select namespace, conflict_id, kind, confidence, likely_current, entry_a as entry_id from live
    union all
    select namespace, conflict_id, kind, confidence, likely_current, entry_b from live
)

select
    o.namespace,
    o.entry_id,
    e.text,
    count(*) as open_conflicts,
    list(o.conflict_id order by o.conflict_id) as conflict_ids,
    list(distinct o.kind order by o.kind) as kinds,
    max(o.confidence) as max_confidence,
    coalesce(max(u.recall_count), 0) as recall_count,
    bool_and(o.likely_current = o.entry_id) as is_likely_current,
    $as_of as as_of
from open_conflicts as o
inner join core.entries as e using (namespace, entry_id)
left join core.entry_usage as u using (namespace, entry_id)
group by o.namespace, o.entry_id, e.text
order by recall_count desc, max_confidence desc, o.namespace, o.entry_id
