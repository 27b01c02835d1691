-- Audit part: every supersede link verdict.
select
    namespace,
    'supersede_link' as entity_kind,
    entry_id || '->' || successor_id as entity_id,
    case status when 'accepted' then 'accept_supersede' else 'reject_supersede' end as action,
    status as rule,
    to_json(struct_pack(source, event_id, entry_trust, successor_trust))::varchar as inputs,
    successor_trust / nullif(entry_trust, 0) as score,
    case when source = 'explicit' then s.trust_guard_ratio end as threshold,
    detail as reason,
    linked_at as decided_at,
    case status when 'accepted' then 'a curator decision (dismiss)' else 'a new link with a reason, trust and no cycle' end
        as reversible_by
from core.supersede_links, core.audit_settings as s
