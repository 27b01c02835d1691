-- One row per entry and per approved principle: score = generality x $w_generality
-- + min(proven, $proven_cap) + recency boost. Recency is of use (last recall), never of the note:
-- age belongs to the note, truth to the fact. A principle counts its members' proof and recalls.
-- With $all false, only the entries and principles in the temp table stage_scope
-- (changes.refresh_entries), read by their hashes (stage_hashes: a few more entries may come, which it leaves out).
with scoped_lifecycle as not materialized (
    select * from core.entry_lifecycle where $all
    union all
    select * from core.entry_lifecycle semi join stage_hashes using (entry_hash) where not $all
),

scoped_usage as not materialized (
    select * from core.entry_usage where $all
    union all
    select * from core.entry_usage semi join stage_hashes using (entry_hash) where not $all
),

inputs as (
    select l.namespace, l.entry_id, l.generality, u.proven_count, u.last_recalled_at
    from scoped_lifecycle as l
    inner join scoped_usage as u using (namespace, entry_id)

    union all

    select p.namespace, p.principle_id, p.generality, p.proven_count, p.last_recalled_at
    from core.principle_proposals as p
    where p.status = 'approved'
      and ($all or exists (select 1 from stage_scope as s where s.namespace = p.namespace and s.entry_id = p.principle_id))
),

timed as (
    select *, (epoch($as_of::timestamp) - epoch(last_recalled_at)) / 86400.0 as days_since_recall
    from inputs
),

boosted as (
    select
        *,
        case
            when days_since_recall <= $recent_boost_days then $recent_boost
            when days_since_recall <= $warm_boost_days then $warm_boost
            else 0.0
        end as recency_boost
    from timed
)

select
    namespace,
    entry_id,
    generality,
    proven_count,
    least(proven_count, $proven_cap) as proven_points,
    recency_boost,
    generality * $w_generality + least(proven_count, $proven_cap) + recency_boost as score
from boosted
