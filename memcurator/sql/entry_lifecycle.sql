-- One row per entry: its state as of $as_of and the rule that put it there (docs/curation.md).
-- Precedence: superseded > expired (validity, operational TTL) > held (admission) > case/archived
-- (episodic) > archived (decay; retention) > reverify > active. Held material idle past
-- max_idle_days is archived like any narrow entry.
with usage as (
    select
        e.*,
        u.recall_count, u.last_recalled_at, u.distinct_recall_runs, u.proven_count,
        u.failed_assertions, u.last_check_status, u.last_verified_at
    from core.entries as e
    inner join core.entry_usage as u using (namespace, entry_id)
),

successor as (
    select namespace, entry_id,
        arg_max(successor_id, linked_at) as successor_id,
        arg_max(reason, linked_at) as successor_reason,
        arg_max(source, linked_at) as successor_source,
        max(linked_at) as superseded_at
    from core.supersede_links
    where status = 'accepted'
    group by namespace, entry_id
),

activity as (
    select namespace, entry_id, ts, true as is_write from core.memory_writes
    union all
    select namespace, entry_id, ts, false as is_write from core.recall_results
),

revivals as (
    -- a re-statement (a new write) after a gap of max_idle_days without any activity
    select namespace, entry_id, max(ts) as revived_at
    from (
        select *, lag(ts) over (partition by namespace, entry_id order by ts, is_write) as previous_ts
        from activity
    )
    where is_write and previous_ts is not null
      and (epoch(ts) - epoch(previous_ts)) / 86400.0 >= $max_idle_days
    group by namespace, entry_id
),

observed as (
    -- idleness is only evidence where recall is observed: a namespace without recall telemetry
    -- (an imported store, a transcript set without memory tools) is never decayed for being quiet
    select distinct namespace from core.recall_results
),

writer_trust as (
    select w.namespace, w.entry_id, w.agent_id, t.trust as agent_trust
    from core.memory_writes as w
    inner join core.agent_trust as t using (namespace, agent_id)
    qualify row_number() over (partition by w.namespace, w.entry_id order by w.ts desc, w.event_id desc) = 1
),

features as (
    select
        u.*,
        r.revived_at,
        wt.agent_id as writer_agent,
        wt.agent_trust,
        s.successor_id, s.successor_reason, s.successor_source, s.superseded_at as accepted_superseded_at,
        -- lead-ins like "learned today:" frame a lesson; they say nothing about the fact's time
        regexp_matches(regexp_replace(norm_text, $lead_in, ''), $deictic) as has_deictic,
        regexp_matches(norm_text, $operational_state) as has_operational_state,
        regexp_matches(norm_text, $one_off) as is_one_off,
        regexp_matches(norm_text, $chatter) or len(string_split(norm_text, ' ')) < 3 as is_chatter,
        regexp_matches(norm_text, $imperative) as is_imperative,
        len(regexp_extract_all(norm_text, $specific)) as specifics,
        coalesce(importance, 1.0) as effective_importance,
        greatest(last_written_at, coalesce(last_recalled_at, last_written_at)) as last_activity_at,
        o.namespace is not null as recall_observed
    from usage as u
    left join successor as s using (namespace, entry_id)
    left join revivals as r using (namespace, entry_id)
    left join writer_trust as wt using (namespace, entry_id)
    left join observed as o using (namespace)
),

generality as (
    select
        *,
        case
            when generality is not null then generality
            else greatest(0.0, least(3.0,
                case class
                    when 'principle' then 2.0 when 'identity' then 1.5 when 'preference' then 1.5
                    when 'lesson' then 1.0 when 'config' then 1.0 when 'relationship' then 1.0
                    when 'operational' then 0.3 else 0.2
                end
                + case when is_imperative then 0.5 else 0.0 end
                - 0.3 * least(specifics, 5)
                + least(1.0, 0.25 * log2(1 + greatest(distinct_runs - 1, 0) + distinct_recall_runs))
            ))
        end as effective_generality,
        case when generality is not null then 'declared' else 'derived' end as generality_rule,
        (not has_deictic and not has_operational_state) as is_durable,
        (not is_one_off) as is_reusable,
        (not is_chatter) as changes_an_answer
    from features
),

timing as (
    select
        *,
        (epoch($as_of::timestamp) - epoch(last_activity_at)) / 86400.0 as idle_days,
        (epoch($as_of::timestamp) - epoch(last_written_at)) / 86400.0 as age_days,
        (epoch($as_of::timestamp) - epoch(coalesce(last_verified_at, last_written_at))) / 86400.0 as verify_age_days,
        row_number() over (partition by namespace, class order by last_written_at desc, entry_id) as recency_rank,
        (is_durable::int + is_reusable::int + changes_an_answer::int) as admission_score
    from generality
),

decided as (
    select
        *,
        case
            when successor_id is not null then 'superseded'
            when valid_until is not null and valid_until <= $as_of then 'expired'
            when class = 'operational' and age_days >= $operational_ttl_days then 'expired'
            when class not in ('identity', 'preference') and admission_score < 3 and recall_observed and idle_days >= $max_idle_days then 'archived'
            when class not in ('identity', 'preference') and admission_score < 3 then 'held'
            when class = 'episodic' and (age_days >= $case_max_age_days or trust < $case_min_trust
                                         or recency_rank > $case_max_count) then 'archived'
            when class = 'episodic' then 'case'
            when class not in ('identity', 'preference') and recall_observed and idle_days >= $max_idle_days
                 and effective_generality < $min_generality then 'archived'
            when class not in ('identity', 'preference') and age_days >= $max_idle_days
                 and effective_importance < $noise_floor then 'archived'
            when class in ('config', 'relationship')
                 and verify_age_days >= $reverify_after_days
                then 'reverify'
            else 'active'
        end as state,
        case
            when successor_id is not null then
                case successor_source when 'failed_check' then 'check_supersede' else 'explicit_supersede' end
            when valid_until is not null and valid_until <= $as_of then 'validity_ended'
            when class = 'operational' and age_days >= $operational_ttl_days then 'operational_ttl'
            when class not in ('identity', 'preference') and admission_score < 3 and recall_observed and idle_days >= $max_idle_days then 'session_material_idle'
            when class not in ('identity', 'preference') and admission_score < 3 then 'admission'
            when class = 'episodic' and age_days >= $case_max_age_days then 'case_too_old'
            when class = 'episodic' and trust < $case_min_trust then 'case_low_trust'
            when class = 'episodic' and recency_rank > $case_max_count then 'case_over_count'
            when class = 'episodic' then 'episodic_class'
            when class not in ('identity', 'preference') and recall_observed and idle_days >= $max_idle_days
                 and effective_generality < $min_generality then 'decay'
            when class not in ('identity', 'preference') and age_days >= $max_idle_days
                 and effective_importance < $noise_floor then 'retention_old_and_unimportant'
            when class in ('config', 'relationship')
                 and verify_age_days >= $reverify_after_days
                then 'reverify_age'
            else 'in_use'
        end as rule
    from timing
)

select
    namespace,
    entry_id,
    class,
    state,
    rule,
    case rule
        when 'explicit_supersede' then 'superseded by ' || successor_id || ': ' || successor_reason
        when 'check_supersede' then 'superseded by ' || successor_id || ': ' || successor_reason
        when 'validity_ended' then 'the fact was valid until ' || strftime(valid_until, '%Y-%m-%d %H:%M')
        when 'operational_ttl' then 'operational state older than ' || $operational_ttl_days || ' days'
        when 'admission' then 'held as session material: fails '
            || array_to_string(list_filter(['durable', 'reusable', 'changes an answer'],
                 (q, i) -> [is_durable, is_reusable, changes_an_answer][i] = false), ', ')
        when 'session_material_idle' then 'session material not recalled for ' || floor(idle_days)::int || ' days'
        when 'case_too_old' then 'case record older than ' || $case_max_age_days || ' days'
        when 'case_low_trust' then 'case record with trust ' || trust || ' < ' || $case_min_trust
        when 'case_over_count' then 'more than ' || $case_max_count || ' newer case records'
        when 'episodic_class' then 'episodic record: readable as a case, not recalled'
        when 'decay' then 'not recalled for ' || floor(idle_days)::int || ' days and generality '
            || round(effective_generality, 2) || ' < ' || $min_generality
        when 'retention_old_and_unimportant' then 'older than ' || $max_idle_days || ' days and importance '
            || round(effective_importance, 2) || ' < ' || $noise_floor
        when 'reverify_age' then 'not verified for ' || $reverify_after_days || ' days: re-verify'
        else 'active'
    end as reason,
    case rule
        when 'explicit_supersede' then accepted_superseded_at
        when 'check_supersede' then accepted_superseded_at
        when 'validity_ended' then valid_until
        when 'operational_ttl' then last_written_at + to_days($operational_ttl_days)
        when 'decay' then last_activity_at + to_days($max_idle_days)
        when 'session_material_idle' then last_activity_at + to_days($max_idle_days)
        when 'retention_old_and_unimportant' then last_written_at + to_days($max_idle_days)
        when 'reverify_age' then coalesce(last_verified_at, last_written_at) + to_days($reverify_after_days)
        when 'in_use' then last_written_at
        else first_written_at
    end as since,
    effective_generality as generality,
    generality_rule,
    admission_score,
    is_durable,
    is_reusable,
    changes_an_answer,
    effective_importance as importance,
    idle_days,
    age_days,
    successor_id,
    case when effective_generality < $min_generality then revived_at end as revived_at,
    coalesce(agent_trust < $trust_review_threshold, false) as flagged_for_review,
    case when agent_trust < $trust_review_threshold
        then 'written by ' || writer_agent || ', whose trust fell to ' || round(agent_trust, 2)
             || ' < ' || $trust_review_threshold
    end as review_reason,
    $as_of as as_of
from decided
order by namespace, entry_id
