-- The pairs the judge reads: entries of one namespace about the same subject (the same subject key in
-- core.entry_subjects, written first: the sorted tag set, non-empty; in a group of at most $cap
-- entries, larger groups only pair what is also similar) or a verified near-duplicate pair. Each pair
-- once, entry_a the older (first written, then id).
-- pair_hash: the pair's current versions (the write each entry's text comes from, the version of the
-- parse of writes) and whether it shares a subject: the judge's verdict stands while it is the same.
-- With $all false, only the pairs with an entry in the temp table candidate_scope (every member of a
-- subject group in it is: contradictions.keep_candidate_pairs), reading the entries of candidate_reads
-- (the scope and its near-duplicates).
with read_entries as materialized (
    -- those of candidate_reads, found by their hashes (with every_hash, the filter true of every hash:
    -- DuckDB skips the other rows in the scan) and matched by key below (by key, every row's strings were
    -- read: 47 ms of scan in a 1 %-churn night at 1M entries)
    select namespace, entry_id, first_written_at, last_event_id from core.entries
    semi join (select entry_hash_of(namespace, entry_id) as entry_hash from candidate_reads
               where every_hash(entry_hash_of(namespace, entry_id))) using (entry_hash)
    where not $all
),

entries as (
    select namespace, entry_id, first_written_at as t, last_event_id
    from (
        select namespace, entry_id, first_written_at, last_event_id from core.entries where $all
        union all
        select * from read_entries semi join candidate_reads using (namespace, entry_id)
    )
),

tagged as (
    select namespace, entry_id, e.t, e.last_event_id, s.subject
    from (
        select * from core.entry_subjects where $all
        union all
        select * from core.entry_subjects semi join candidate_scope using (namespace, entry_id) where not $all
    ) as s
    inner join entries as e using (namespace, entry_id)
    qualify count(*) over (partition by namespace, s.subject) <= $cap
),

by_subject as (
    select a.namespace, a.entry_id as entry_a, b.entry_id as entry_b, true as same_subject,
        a.last_event_id as event_a, b.last_event_id as event_b
    from tagged as a
    inner join tagged as b
        on b.namespace = a.namespace and b.subject = a.subject
        and (a.t < b.t or (a.t = b.t and a.entry_id < b.entry_id))
),

similar_pairs as (
    select namespace, entry_a, entry_b from core.near_duplicate_pairs where $all
    union all
    select p.namespace, p.entry_a, p.entry_b from core.near_duplicate_pairs as p
    semi join candidate_scope as s on s.namespace = p.namespace and s.entry_id = p.entry_a where not $all
    union all
    select p.namespace, p.entry_a, p.entry_b from core.near_duplicate_pairs as p
    semi join candidate_scope as s on s.namespace = p.namespace and s.entry_id = p.entry_b where not $all
),

by_similarity as (
    select distinct namespace,
        if(x_first, x_id, y_id) as entry_a, if(x_first, y_id, x_id) as entry_b, false as same_subject,
        if(x_first, x_event, y_event) as event_a, if(x_first, y_event, x_event) as event_b
    from (
        select p.namespace, x.entry_id as x_id, y.entry_id as y_id, x.last_event_id as x_event,
            y.last_event_id as y_event, x.t < y.t or (x.t = y.t and x.entry_id < y.entry_id) as x_first
        from similar_pairs as p
        inner join entries as x on x.namespace = p.namespace and x.entry_id = p.entry_a
        inner join entries as y on y.namespace = p.namespace and y.entry_id = p.entry_b
    )
),

pairs as (
    select * from by_subject
    union all
    (select * from by_similarity anti join by_subject using (namespace, entry_a, entry_b))
)

select namespace, entry_a, entry_b, same_subject, hash(event_a, event_b, same_subject, $parse) as pair_hash
from pairs
