-- Verdict per proposed link: dangling, cycle_rejected, trust_guarded or accepted.
-- Inputs: link_candidates (sql/supersede_candidates.sql), cycle_nodes (strong components > 1).
select
    l.namespace,
    l.entry_id,
    l.successor_id,
    l.source,
    l.reason,
    l.linked_at,
    l.event_id,
    l.entry_trust,
    l.successor_trust,
    case
        when not (l.entry_exists and l.successor_exists) then 'dangling'
        when a.component is not null and a.component = b.component then 'cycle_rejected'
        when l.source = 'explicit' and l.successor_trust < $ratio * l.entry_trust then 'trust_guarded'
        else 'accepted'
    end as status,
    case
        when not l.entry_exists then 'no entry ' || l.entry_id || ' before as_of'
        when not l.successor_exists then 'no entry ' || l.successor_id || ' before as_of'
        when a.component is not null and a.component = b.component
            then 'supersede cycle: ' || l.entry_id || ' and ' || l.successor_id || ' would replace each other'
        when l.source = 'explicit' and l.successor_trust < $ratio * l.entry_trust
            then 'writer trust ' || round(l.successor_trust, 3) || ' < ' || $ratio || ' x existing trust '
                 || round(l.entry_trust, 3) || ': recorded as a conflict instead'
        else 'accepted: ' || l.reason
    end as detail
from link_candidates as l
left join cycle_nodes as a on a.namespace = l.namespace and a.entry_id = l.entry_id
left join cycle_nodes as b on b.namespace = l.namespace and b.entry_id = l.successor_id
