-- The latest curator decision on each cluster before $as_of (included where it is read).
select
    namespace,
    target_id as cluster_id,
    arg_max(action, (ts, decision_id)) as action,
    arg_max(curator, (ts, decision_id)) as curator,
    max(ts) as decided_at,
    arg_max(reason, (ts, decision_id)) as reason,
    arg_max(data, (ts, decision_id))::json ->> '$.canonical_entry_id' as approved_canonical
from raw.curator_decisions
where target_kind = 'cluster' and ts < $as_of
group by namespace, target_id
