-- One row per recallable entry per namespace, ranked, with its banners (mart.recall_ranking: the scores
-- and texts are not copied; the view mart.recall_view reads each score from core.entry_scores, whose
-- recency boost moves with the day count, and each text from its entry or approved principle).
-- Tier `active`: the active set (active, reverify) and approved principles. Tier `session`: held and
-- case material, searchable. Superseded, merged, redundant, expired and archived entries never appear.
-- Every entry in an open conflict carries the conflict (with the other side and which is likely current).
-- With $all false, only the rows of the entries in the temp table stage_scope (changes.refresh_entries), read
-- by their hashes (stage_hashes: a few more entries may come, which it leaves out); core.entries' and
-- core.entry_usage's without their strings, joined on entry_key (changes.define_entry_key).
-- The ranks are not stored: the view mart.recall_view numbers each namespace's rows (ranking.RANK).
with scoped_lifecycle as not materialized (
    -- scoped core.entry_lifecycle
),

scoped_entries as not materialized (
    -- scoped keyed core.entries
),

scoped_usage as not materialized (
    -- scoped keyed core.entry_usage
),

recallable as (
    select l.namespace, l.entry_id, entry_key(l.namespace, l.entry_id, l.entry_hash) as entry_key,
        l.class, l.state, l.reason, l.generality, l.flagged_for_review, l.review_reason
    from scoped_lifecycle as l
    where l.state in ('active', 'reverify', 'held', 'case')
),

scoped_conflicts as not materialized (
    -- scoped pairs core.contradictions
),

open_pairs as (
    -- of the entries derived (a side may be out of scope: its state is read below)
    select * from scoped_conflicts where status = 'open'
),

-- include open_pair_sides

-- the sides' texts, read the same way (joined by key, every entry's text was read: with their states, 75 ms
-- of scan in a 1 %-churn night at 1M entries)
side_texts as materialized (
    select namespace, entry_id, text from core.entries
    semi join (select entry_hash from sides where every_hash(entry_hash)) using (entry_hash)
),

recallable_sides as (
    select namespace, entry_id from side_states where state in ('active', 'reverify', 'held', 'case')
),

live as (
    -- open conflicts whose two sides are both recallable (the same rule as core.contested_entries)
    select k.*
    from open_pairs as k
    semi join recallable_sides as ra on ra.namespace = k.namespace and ra.entry_id = k.entry_a
    semi join recallable_sides as rb on rb.namespace = k.namespace and rb.entry_id = k.entry_b
),

conflict_sides as (
    select namespace, entry_a as entry_id, entry_b as other_id, kind, detector, likely_current from live
    union all
    select namespace, entry_b, entry_a, kind, detector, likely_current from live
),

conflict_banners as (
    select
        c.namespace, c.entry_id,
        list('CONFLICT (' || coalesce(c.detector, c.kind) || '): disagrees with ' || c.other_id || ' "'
             || left(o.text, 80) || '"; likely current: '
             || case when c.likely_current = c.entry_id then 'this entry' else c.other_id end
             order by c.other_id) as banners,
        list(c.other_id order by c.other_id) as conflict_with,
        bool_and(c.likely_current = c.entry_id) as is_likely_current
    from conflict_sides as c
    inner join side_texts as o on o.namespace = c.namespace and o.entry_id = c.other_id
    group by c.namespace, c.entry_id
),

entry_rows as (
    select
        r.namespace, r.entry_id, r.class, r.state, r.generality,
        e.tags, e.first_written_at, e.last_written_at, e.version_count, e.writer_agents,
        e.valid_from, e.valid_until,
        u.proven_count, u.last_recalled_at,
        coalesce(u.last_check_status = 'fail', false) as has_failed_check,
        coalesce(cb.conflict_with, []::varchar[]) as conflict_with,
        coalesce(cb.is_likely_current, true) as is_likely_current,
        list_filter([
            case when u.last_check_status = 'fail'
                then 'WARNING: failed check (assertion) at ' || strftime(u.last_failed_assertion_at, '%Y-%m-%d') end,
            case when r.state = 'reverify' then 're-verify: ' || r.reason end,
            case when r.flagged_for_review then 'review: ' || r.review_reason end,
            -- (the lifecycle's reasons name the state: 'held as session material: fails durable', 'episodic
            -- record: readable as a case, not recalled', which read wrongly on an entry recalled)
            case when r.state = 'held' then 'session material: '
                     || coalesce(nullif(regexp_extract(r.reason, '^held as session material: (.*)$', 1), ''), r.reason)
                 when r.state = 'case' then 'case record: an episode, not a general rule' end
        ], b -> b is not null)
        || coalesce(cb.banners[1:3], []::varchar[])
        || case when len(cb.banners) > 3 then ['... and ' || (len(cb.banners) - 3) || ' more conflicts (memcurator show)']
                else []::varchar[] end as banners
    from recallable as r
    inner join scoped_entries as e using (entry_key)
    inner join scoped_usage as u using (entry_key)
    left join conflict_banners as cb using (namespace, entry_id)
),

principle_rows as (
    select
        p.namespace, p.principle_id as entry_id, 'principle' as class, 'active' as state, p.generality,
        []::varchar[] as tags, p.decided_at as first_written_at, p.decided_at as last_written_at,
        1::bigint as version_count, []::varchar[] as writer_agents,
        null::timestamp as valid_from, null::timestamp as valid_until,
        p.proven_count, p.last_recalled_at,
        false as has_failed_check, []::varchar[] as conflict_with, true as is_likely_current,
        ['principle: merges ' || p.member_count || ' entries written by ' || p.distinct_runs || ' runs and '
         || p.distinct_agents || ' agents (cluster ' || p.cluster_id || ')'] as banners
    from core.principle_proposals as p
    where p.status = 'approved'
      and ($all or exists (select 1 from stage_scope as x where x.namespace = p.namespace and x.entry_id = p.principle_id))
),

all_rows as (
    select * from entry_rows
    union all
    select * from principle_rows
)

select
    namespace,
    entry_id,
    case when state in ('active', 'reverify') then 'active' else 'session' end as tier,
    class, state, banners, has_failed_check, conflict_with, is_likely_current, tags, generality,
    proven_count, last_recalled_at, valid_from, valid_until, first_written_at, last_written_at, version_count,
    writer_agents
from all_rows
