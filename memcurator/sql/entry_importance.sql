-- One row per entry: declared importance (missing = 1.0) times the redundancy penalty. Each verified
-- near-duplicate written later lowers the older entry by $penalty x (0.8 + 0.4 x (s - t) / (1 - t)):
-- about 10 % at the threshold t, about 14 % for an exact copy. Pairs detected as contradictory are
-- not "compatible" and do not count. With $all false, only the entries in the temp table stage_scope
-- (changes.refresh_entries), read by their hashes (stage_hashes: a few more entries may come, which it leaves out).
with scoped_entries as not materialized (
    -- scoped core.entries
),

scoped_pairs as not materialized (
    -- scoped core.near_duplicate_pairs by entry_a
),

conflicting as (
    select namespace, least(entry_a, entry_b) as lo, greatest(entry_a, entry_b) as hi
    from core.contradictions
),

compatible as (
    select p.*
    from scoped_pairs as p
    anti join conflicting as k
        on k.namespace = p.namespace and k.lo = least(p.entry_a, p.entry_b) and k.hi = greatest(p.entry_a, p.entry_b)
),

penalties as (
    select
        namespace,
        entry_a as entry_id,
        count(*) as later_similar_writes,
        -- summed in one order (the terms sorted) so the factor is bit-identical however the rows are split;
        -- a sorted list, not an ordered aggregate (which sorted each of 227k groups apart: 0.8 s -> 0.2-0.7 s at 1M)
        exp(list_sum(list_sort(list(ln(1.0 - $penalty * (0.8 + 0.4 * (similarity - $threshold) / (1.0 - $threshold))))))) as penalty_factor
    from compatible
    group by namespace, entry_a
)

select
    e.namespace,
    e.entry_id,
    coalesce(e.importance, 1.0) as declared_importance,
    coalesce(p.later_similar_writes, 0) as later_similar_writes,
    coalesce(p.penalty_factor, 1.0) as penalty_factor,
    coalesce(e.importance, 1.0) * coalesce(p.penalty_factor, 1.0) as importance
from scoped_entries as e
left join penalties as p using (namespace, entry_id)
