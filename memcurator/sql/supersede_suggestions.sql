-- For each entry first written in the last window_days before the night: the closest older entries
-- of its namespace it may replace (same subject key or near-duplicate), best 3, so a curator (or the
-- writing agent next time) can confirm the link in one action. The query of the view
-- core.supersede_suggestions: the night and the window are the row of core.suggestion_settings.
with recent as (
    select e.namespace, e.entry_id, e.tags, e.first_written_at
    from core.entries as e, core.suggestion_settings as s
    where e.first_written_at >= s.as_of - to_days(s.window_days) and e.supersedes is null
),

close_pairs as (
    select p.namespace, p.entry_b as entry_id, p.entry_a as candidate_id, p.similarity, 'near-duplicate' as basis
    from core.near_duplicate_pairs as p
    union all
    select k.namespace, k.entry_b, k.entry_a, k.confidence, 'conflict: ' || coalesce(k.detector, k.kind)
    from core.contradictions as k
    where k.status = 'open'
),

same_subject as (
    select r.namespace, r.entry_id, o.entry_id as candidate_id, 0.5 as similarity, 'same subject key' as basis
    from recent as r
    inner join core.entries as o
        on o.namespace = r.namespace and len(r.tags) > 0 and list_sort(o.tags) = list_sort(r.tags)
        and o.first_written_at < r.first_written_at
),

candidates as (
    select s.* from close_pairs as s inner join recent as r using (namespace, entry_id)
    union all
    select * from same_subject
),

live as (
    -- only candidates still recallable can be replaced
    select c.* from candidates as c
    inner join core.entry_lifecycle as l on l.namespace = c.namespace and l.entry_id = c.candidate_id
    where l.state in ('active', 'reverify', 'held', 'case')
)

select namespace, entry_id, candidate_id,
    max(similarity) as score,
    -- the distinct bases, sorted (string_agg with distinct and order by sorted per group: 0.43 s at 1M, this 0.31 s)
    array_to_string(list_sort(list_distinct(list(basis))), ', ') as basis,
    row_number() over (partition by namespace, entry_id order by max(similarity) desc, candidate_id) as rank,
    (select as_of from core.suggestion_settings) as as_of
from live
group by namespace, entry_id, candidate_id
qualify rank <= 3
