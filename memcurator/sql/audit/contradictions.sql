-- Audit part: every detected conflict and every curator resolution, dated by the night (the night:
-- core.audit_settings as s).
select
    namespace,
    'conflict' as entity_kind,
    conflict_id as entity_id,
    case when status in ('open', 'resolved_by_link') then 'flag_conflict' else 'resolve_conflict_' || status end as action,
    case when kind = 'detected' then 'detector_' || detector else kind end as rule,
    to_json(struct_pack(entry_a, entry_b, kind, detector, likely_current))::varchar as inputs,
    confidence as score,
    null::double as threshold,
    coalesce(resolution_reason, evidence) as reason,
    s.as_of as decided_at,
    case when status = 'open' then 'memcurator review conflicts (replace, narrow, retire, dismiss)'
        else 'a later curator decision' end as reversible_by
from core.contradictions, core.audit_settings as s
where kind in ('detected', 'trust_guarded', 'cycle') or status not in ('open', 'resolved_by_link')
