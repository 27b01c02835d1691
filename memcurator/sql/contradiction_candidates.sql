-- The pairs the judge reads: entries of one namespace about the same subject (the same sorted tag set,
-- non-empty, in a group of at most $cap entries; larger groups only pair what is also similar) or a
-- verified near-duplicate pair. Each pair once, entry_a the older (first written, then id).
-- linked: a supersede link joins the pair either way (it is declared, not judged).
-- pair_hash: the pair's current versions (the write each entry's text comes from, the version of the
-- parse of writes) and whether it shares a subject: the judge's verdict stands while it is the same.
with entries as (
    select namespace, entry_id, first_written_at as t, last_event_id,
        case when len(tags) > 0 then array_to_string(list_sort(tags), chr(31)) end as subject
    from core.entries
),

tagged as (
    select namespace, entry_id, t, last_event_id, subject
    from entries
    where subject is not null
    qualify count(*) over (partition by namespace, subject) <= $cap
),

by_subject as (
    select a.namespace, a.entry_id as entry_a, b.entry_id as entry_b, true as same_subject,
        a.last_event_id as event_a, b.last_event_id as event_b
    from tagged as a
    inner join tagged as b
        on b.namespace = a.namespace and b.subject = a.subject
        and (a.t < b.t or (a.t = b.t and a.entry_id < b.entry_id))
),

by_similarity as (
    select distinct namespace,
        if(x_first, x_id, y_id) as entry_a, if(x_first, y_id, x_id) as entry_b, false as same_subject,
        if(x_first, x_event, y_event) as event_a, if(x_first, y_event, x_event) as event_b
    from (
        select p.namespace, x.entry_id as x_id, y.entry_id as y_id, x.last_event_id as x_event,
            y.last_event_id as y_event, x.t < y.t or (x.t = y.t and x.entry_id < y.entry_id) as x_first
        from core.near_duplicate_pairs as p
        inner join entries as x on x.namespace = p.namespace and x.entry_id = p.entry_a
        inner join entries as y on y.namespace = p.namespace and y.entry_id = p.entry_b
    )
),

pairs as (
    select * from by_subject
    union all
    (select * from by_similarity anti join by_subject using (namespace, entry_a, entry_b))
),

links as (
    select namespace, entry_id as entry_a, successor_id as entry_b from core.supersede_links
    union
    select namespace, successor_id, entry_id from core.supersede_links
)

select p.namespace, p.entry_a, p.entry_b, p.same_subject,
    hash(p.event_a, p.event_b, p.same_subject, $parse) as pair_hash,
    exists (select 1 from links as l
            where l.namespace = p.namespace and l.entry_a = p.entry_a and l.entry_b = p.entry_b) as linked
from pairs as p
