-- One row per entry: its state as of $as_of and the rule that put it there (docs/curation.md).
-- Precedence: superseded (link, curator replace) > curator retire > merged (approved principle)
-- > redundant (a later word-for-word copy)
-- > expired (validity, operational TTL) > held (admission) > case/archived
-- (episodic) > archived (decay; retention) > reverify > active. Held material idle past
-- max_idle_days is archived like any narrow entry.
-- With $all false, only the entries in the temp table stage_scope (changes.refresh_entries; the
-- builder adds whole clusters and namespaces where one entry's change moves the others' rows).
-- The per-entry inputs are read by the scope's hashes (stage_hashes: a few more entries may come, which
-- changes.refresh_entries leaves out); all but core.entries' without their strings, joined on entry_key,
-- the hash where it names one entry (changes.define_entry_key).
-- No column counts days to the night (a row stands until its inputs change or next_change_at comes):
-- the reasons of the idleness rules name the last activity's date and the days allowed.
with scoped_entries as not materialized (
    -- scoped core.entries
),

scoped_writes as not materialized (
    -- scoped keyed core.memory_writes
),

-- the per-entry inputs, narrowed the same way (joined whole, one of them was hashed, 1M rows at 1M
-- entries, for the 10k of a 1 %-churn night)
scoped_importance as not materialized (
    -- scoped keyed core.entry_importance
),

scoped_text_features as not materialized (
    -- scoped keyed core.entry_text_features
),

scoped_generality as not materialized (
    -- scoped keyed core.entry_generality
),

scoped_usage as not materialized (
    -- scoped keyed core.entry_usage
),

usage as (
    select
        e.*,
        u.entry_key,
        u.recall_count, u.last_recalled_at, u.distinct_recall_runs, u.proven_count,
        u.failed_assertions, u.last_check_status, u.last_verified_at
    from scoped_entries as e
    inner join scoped_usage as u on u.entry_key = entry_key(e.namespace, e.entry_id, e.entry_hash)
),

merged as (
    select p.namespace, unnest(p.members) as entry_id, p.principle_id, p.cluster_id
    from core.principle_proposals as p
    where p.status = 'approved'
),

curated as (
    -- curator resolutions of conflicts: replace moves the non-current side aside, retire archives it
    select namespace, case when likely_current = entry_a then entry_b else entry_a end as entry_id,
        status as resolution, likely_current as kept, resolution_reason
    from core.contradictions
    where status in ('replace', 'retire')
    qualify row_number() over (partition by namespace, entry_id order by status, conflict_id) = 1
),

restated as (
    -- an identical (same shingle set) write came later: the newest copy carries the statement
    select namespace, entry_a as entry_id, arg_max(entry_b, entry_b) as restated_by, count(*) as later_copies
    from (
        -- scoped core.near_duplicate_pairs by entry_a
    )
    where method = 'exact'
    group by namespace, entry_a
),

successor as (
    -- the scope's links only (grouped whole, the 55k accepted links of the 1M bench store took 0.1 s of
    -- every night, a night with nothing to do included)
    select namespace, entry_id,
        arg_max(successor_id, linked_at) as successor_id,
        arg_max(reason, linked_at) as successor_reason,
        arg_max(source, linked_at) as successor_source,
        max(linked_at) as superseded_at
    from (
        -- scoped core.supersede_links by entry_id
    )
    where status = 'accepted'
    group by namespace, entry_id
),

activity as (
    -- own writes and recalls (a near-duplicate's writes count through cluster_activity); a recall may name
    -- an entry core.entries does not hold, so recalls are matched by their strings
    select entry_key, ts, true as is_write from scoped_writes
    union all
    select u.entry_key, r.ts, false as is_write
    from (
        select namespace, entry_id, ts from core.recall_results where $all
        union all
        select namespace, entry_id, ts from core.recall_results semi join stage_hashes using (entry_hash)
        where not $all
    ) as r
    inner join usage as u using (namespace, entry_id)
),

scoped_clusters as materialized (  -- whole clusters: those with a member in scope
    select * from core.near_duplicate_clusters where $all
    union all
    select * from core.near_duplicate_clusters
    where not $all and (namespace, cluster_id) in (
        select (namespace, cluster_id) from core.near_duplicate_clusters semi join stage_hashes using (entry_hash))
),

cluster_writes as (
    -- their members' writes, read by the members' hashes (joined whole, every write of the log was read
    -- for the 20k members of a 1 %-churn night's clusters at 1M entries; every_hash, the filter true of
    -- every hash, has DuckDB skip the other writes in the scan)
    select c.namespace, c.cluster_id, w.ts,
        lag(w.ts) over (partition by c.namespace, c.cluster_id order by w.ts) as previous_ts
    from scoped_clusters as c
    inner join (
        select * from core.memory_writes where $all
        union all
        select * from core.memory_writes
        semi join (select entry_hash from scoped_clusters where every_hash(entry_hash)) using (entry_hash)
        where not $all
    ) as w using (namespace, entry_id)
),

cluster_activity as (
    -- the latest write in each cluster, and the latest one that came after a gap of max_idle_days
    -- without any write in that cluster (a revival by re-statement)
    select namespace, cluster_id,
        max(ts) as last_restated_at,
        max(ts) filter (where previous_ts is not null
                          and (epoch(ts) - epoch(previous_ts)) / 86400.0 >= $max_idle_days) as revived_at
    from cluster_writes
    group by namespace, cluster_id
),

revivals as (
    -- a re-statement (a new write) after a gap of max_idle_days without any activity; an entry with
    -- one write and no recall has nothing before it (the window reads only the others' activity)
    select entry_key, max(ts) as revived_at
    from (
        select a.*, lag(a.ts) over (partition by a.entry_key order by a.ts, a.is_write) as previous_ts
        from activity as a
        semi join usage as u on u.entry_key = a.entry_key and u.version_count + u.recall_count > 1
    )
    where is_write and previous_ts is not null
      and (epoch(ts) - epoch(previous_ts)) / 86400.0 >= $max_idle_days
    group by entry_key
),

near_activity as (
    select c.namespace, c.entry_id, a.last_restated_at, a.revived_at as cluster_revived_at
    from core.near_duplicate_clusters as c
    inner join cluster_activity as a using (namespace, cluster_id)
),

observed as (
    -- idleness is only evidence where recall is observed: a namespace without recall telemetry
    -- (an imported store, a transcript set without memory tools) is never decayed for being quiet
    select distinct namespace from core.recall_results
),

writer_trust as (
    select u.entry_key, w.agent_id, t.trust as agent_trust
    from scoped_writes as w
    inner join usage as u on u.entry_key = w.entry_key
    inner join core.agent_trust as t on t.namespace = u.namespace and t.agent_id = w.agent_id
    qualify row_number() over (partition by u.entry_key order by w.ts desc, w.event_id desc) = 1
),

features as (
    select
        u.*,
        greatest(r.revived_at, na.cluster_revived_at) as revived_at,
        wt.agent_id as writer_agent,
        wt.agent_trust,
        s.successor_id, s.successor_reason, s.successor_source, s.superseded_at as accepted_superseded_at,
        t.has_deictic, t.has_operational_state, t.is_one_off, t.is_chatter,
        imp.importance as effective_importance,
        imp.penalty_factor,
        m.principle_id, cu.resolution, cu.kept, cu.resolution_reason, rs.restated_by, rs.later_copies,
        greatest(last_written_at, coalesce(last_recalled_at, last_written_at), coalesce(na.last_restated_at, last_written_at))
            as last_activity_at,
        o.namespace is not null as recall_observed
    from usage as u
    left join successor as s using (namespace, entry_id)
    left join revivals as r using (entry_key)
    left join writer_trust as wt using (entry_key)
    left join observed as o using (namespace)
    inner join scoped_importance as imp using (entry_key)
    inner join scoped_text_features as t using (entry_key)
    left join merged as m using (namespace, entry_id)
    left join restated as rs using (namespace, entry_id)
    left join curated as cu using (namespace, entry_id)
    left join near_activity as na using (namespace, entry_id)
),

generality as (
    select
        f.*,
        g.generality as effective_generality,
        g.generality_rule,
        (not has_deictic and not has_operational_state) as is_durable,
        (not is_one_off) as is_reusable,
        (not is_chatter) as changes_an_answer
    from features as f
    inner join scoped_generality as g using (entry_key)
),

episodic_rank as (
    -- only case records are capped by count: ranked on the narrow columns (a window over every entry's
    -- whole row was half of this step at 1M entries). Every entry has its usage, importance, text-feature
    -- and generality row, so these are the ranks among the joined rows.
    select namespace, entry_id,
        row_number() over (partition by namespace order by last_written_at desc, entry_id) as recency_rank
    from (
        select * from core.entries where class = 'episodic' and $all
        union all
        select * from core.entries
        where class = 'episodic' and not $all and namespace in (select namespace from stage_scope)
    )
),

timing as (
    select
        g.*,
        (epoch($as_of::timestamp) - epoch(last_activity_at)) / 86400.0 as idle_days,
        (epoch($as_of::timestamp) - epoch(last_written_at)) / 86400.0 as age_days,
        (epoch($as_of::timestamp) - epoch(coalesce(last_verified_at, last_written_at))) / 86400.0 as verify_age_days,
        er.recency_rank,
        (is_durable::int + is_reusable::int + changes_an_answer::int) as admission_score
    from generality as g
    left join episodic_rank as er using (namespace, entry_id)
),

decided as (
    select
        *,
        case
            when successor_id is not null then 'superseded'
            when resolution = 'replace' then 'superseded'
            when resolution = 'retire' then 'archived'
            when principle_id is not null then 'merged'
            when restated_by is not null then 'redundant'
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
                case successor_source when 'failed_check' then 'check_supersede' when 'curator' then 'curator_confirmed_supersede'
                    else 'explicit_supersede' end
            when resolution = 'replace' then 'curator_replace'
            when resolution = 'retire' then 'curator_retire'
            when principle_id is not null then 'approved_principle'
            when restated_by is not null then 'exact_restatement'
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
        when 'curator_confirmed_supersede' then 'superseded by ' || successor_id || ' (confirmed by a curator): ' || successor_reason
        when 'curator_replace' then 'replaced by ' || kept || ' (curator): ' || resolution_reason
        when 'curator_retire' then 'retired by a curator: ' || resolution_reason
        when 'approved_principle' then 'merged under approved principle ' || principle_id
        when 'exact_restatement' then 'restated word for word later (' || later_copies || ' later copies, newest '
            || restated_by || ')'
        when 'redundancy_below_noise_floor' then 'restated by later near-duplicates: importance '
            || round(effective_importance, 3) || ' < noise floor ' || $noise_floor
        when 'validity_ended' then 'the fact was valid until ' || strftime(valid_until, '%Y-%m-%d %H:%M')
        when 'operational_ttl' then 'operational state older than ' || $operational_ttl_days || ' days'
        when 'admission' then 'held as session material: fails '
            || array_to_string(list_filter(['durable', 'reusable', 'changes an answer'],
                 (q, i) -> [is_durable, is_reusable, changes_an_answer][i] = false), ', ')
        when 'session_material_idle' then 'session material with no write or recall since '
            || strftime(last_activity_at, '%Y-%m-%d') || ' (' || $max_idle_days || ' days allowed)'
        when 'case_too_old' then 'case record older than ' || $case_max_age_days || ' days'
        when 'case_low_trust' then 'case record with trust ' || trust || ' < ' || $case_min_trust
        when 'case_over_count' then 'more than ' || $case_max_count || ' newer case records'
        when 'episodic_class' then 'episodic record: readable as a case, not recalled'
        when 'decay' then 'no write or recall since ' || strftime(last_activity_at, '%Y-%m-%d') || ' ('
            || $max_idle_days || ' days allowed) and generality ' || round(effective_generality, 2) || ' < ' || $min_generality
        when 'retention_old_and_unimportant' then 'older than ' || $max_idle_days || ' days and importance '
            || round(effective_importance, 2) || ' < ' || $noise_floor
        when 'reverify_age' then 'not verified for ' || $reverify_after_days || ' days: re-verify'
        else 'active'
    end as reason,
    case rule
        when 'explicit_supersede' then accepted_superseded_at
        when 'check_supersede' then accepted_superseded_at
        when 'curator_confirmed_supersede' then accepted_superseded_at
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
    last_written_at,
    last_activity_at,
    coalesce(successor_id, principle_id, case when resolution = 'replace' then kept end, restated_by) as successor_id,
    case when effective_generality < $min_generality then revived_at end as revived_at,
    coalesce(agent_trust < $trust_review_threshold, false) as flagged_for_review,
    case when agent_trust < $trust_review_threshold
        then 'written by ' || writer_agent || ', whose trust fell to ' || round(agent_trust, 2)
             || ' < ' || $trust_review_threshold
    end as review_reason,
    recall_observed,
    -- the earliest time after this night (less a minute, for the rounding of the day counts above) at
    -- which one of the date rules could move the entry: it is derived again then. A rule counts only
    -- where what it reads besides the date lets it fire (class, recalls, generality, importance: when
    -- those change, the entry is derived again anyway); counting every rule made a 1 %-churn night at
    -- 1M derive 38k entries again only for this time to move on
    list_min(list_filter([
        valid_until,
        case when class = 'operational' then last_written_at + to_days($operational_ttl_days) end,
        case when class not in ('identity', 'preference') and recall_observed
                  and (admission_score < 3 or effective_generality < $min_generality)
             then last_activity_at + to_days($max_idle_days) end,
        case when class = 'episodic' then last_written_at + to_days($case_max_age_days) end,
        case when class not in ('identity', 'preference') and effective_importance < $noise_floor
             then last_written_at + to_days($max_idle_days) end,
        case when class in ('config', 'relationship')
             then coalesce(last_verified_at, last_written_at) + to_days($reverify_after_days) end
    ], t -> t > $as_of::timestamp - interval 1 minute)) as next_change_at
from decided
