-- Audit part: every principle proposal with its status, and every redundancy penalty (a proposal still
-- proposed and a penalty are dated by the night). The knobs and the night: core.audit_settings as s.
select
    namespace,
    'cluster' as entity_kind,
    cluster_id as entity_id,
    case status when 'proposed' then 'propose_principle' when 'approved' then 'approve_principle'
        when 'rejected' then 'reject_principle' else 'unmerge_principle' end as action,
    case when status = 'proposed' then 'min_principle_members' else 'curator_decision' end as rule,
    to_json(struct_pack(principle_id, canonical_entry_id, member_count, distinct_runs, distinct_agents,
                        proven_count, open_conflicts, members))::varchar as inputs,
    member_count::double as score,
    s.min_members::double as threshold,
    case when status = 'proposed'
        then member_count || ' near-duplicates (verified Jaccard >= ' || s.threshold || '); canonical ' || canonical_entry_id
        else status || ' by ' || coalesce(decided_by, '?') || ': ' || coalesce(decision_reason, '') end as reason,
    case status when 'proposed' then s.as_of else p.decided_at end as decided_at,
    case status when 'approved' then 'memcurator review unmerge' else 'memcurator review approve/reject' end
        as reversible_by
from core.principle_proposals as p, core.audit_settings as s

union all

select
    namespace, 'entry', entry_id, 'penalise_redundancy', 'redundancy_penalty',
    to_json(struct_pack(declared_importance, later_similar_writes, penalty_factor))::varchar,
    importance, s.noise_floor,
    later_similar_writes || ' later near-duplicates lowered importance to ' || round(importance, 3),
    s.as_of, 'derived each night: removing the later writes (purge) or unmerging restores it'
from core.entry_importance, core.audit_settings as s
where later_similar_writes > 0
