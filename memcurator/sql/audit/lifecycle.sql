-- Audit part: every non-active lifecycle state, every revival and every review flag.
select
    namespace,
    'entry' as entity_kind,
    entry_id as entity_id,
    case state
        when 'superseded' then 'supersede' when 'expired' then 'expire' when 'held' then 'hold'
        when 'case' then 'keep_as_case' when 'archived' then 'archive' when 'reverify' then 'mark_reverify'
        when 'merged' then 'merge' when 'redundant' then 'mark_redundant'
    end as action,
    rule,
    to_json(struct_pack(generality, importance, idle_days, age_days, admission_score, is_durable,
                        is_reusable, changes_an_answer, successor_id))::varchar as inputs,
    case rule
        when 'decay' then generality when 'retention_old_and_unimportant' then importance
        when 'admission' then admission_score::double else idle_days
    end as score,
    case rule
        when 'decay' then s.min_generality when 'retention_old_and_unimportant' then s.noise_floor
        when 'admission' then 3.0 when 'operational_ttl' then s.operational_ttl_days::double
    end as threshold,
    reason,
    since as decided_at,
    case state
        when 'superseded' then 'a curator decision (dismiss) or removing the link'
        when 'expired' then 'a new write with a later validity'
        when 'archived' then 'a new write or near-duplicate of it (revival), or a recall'
        when 'reverify' then 'a passing check'
        when 'merged' then 'memcurator review unmerge'
        when 'redundant' then 'derived each night: purging the later copies restores it'
        else 'a new write that passes admission'
    end as reversible_by
from (  -- the days to the night (the lifecycle stores the times they count from)
    select l.*, s.*, (epoch(s.as_of) - epoch(l.last_activity_at)) / 86400.0 as idle_days,
        (epoch(s.as_of) - epoch(l.last_written_at)) / 86400.0 as age_days
    from core.entry_lifecycle as l, core.audit_settings as s
) as s
where state <> 'active'

union all

select namespace, 'entry', entry_id, 'revive', 'restatement',
    to_json(struct_pack(generality, revived_at))::varchar, generality, s.min_generality,
    're-stated after an idle gap of at least ' || s.max_idle_days || ' days', revived_at,
    'decay after another idle gap'
from core.entry_lifecycle, core.audit_settings as s
where revived_at is not null

union all

select namespace, 'entry', entry_id, 'flag_for_review', 'trust_trajectory',
    to_json(struct_pack(review_reason))::varchar, null, s.trust_review_threshold, review_reason, since,
    'the agent regaining trust (passing checks)'
from core.entry_lifecycle, core.audit_settings as s
where flagged_for_review
