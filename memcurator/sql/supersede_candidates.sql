-- Every proposed supersede link in core.memory_writes and core.checks (both already cut at as_of): explicit ones from writes (with their reason) and
-- ones written by a failing assertion check that names the correcting entry. With $all false, at least every link with
-- an entry in the temp table link_scope (changes.refresh_pairs leaves out the others).
with supersede_writes as (
    select w.namespace, w.entry_id, w.supersedes, w.supersede_reason, w.ts, w.event_id, w.trust
    from core.memory_writes as w
    where w.supersedes is not null
),

successors as (
    -- the entries whose links are read: each one's latest link stands, so an entry is read whole or not at all
    select namespace, entry_id from link_scope
    union
    select w.namespace, w.entry_id from supersede_writes as w
    semi join link_scope as s on s.namespace = w.namespace and s.entry_id = w.supersedes
),

explicit as (
    select
        w.namespace,
        w.supersedes as entry_id,
        w.entry_id as successor_id,
        'explicit' as source,
        w.supersede_reason as reason,
        w.ts as linked_at,
        w.event_id,
        w.trust as successor_trust
    from (select * from supersede_writes where $all
          union all
          select * from supersede_writes semi join successors using (namespace, entry_id) where not $all) as w
    -- only the current version of the successor speaks for it
    qualify row_number() over (partition by w.namespace, w.entry_id order by w.ts desc, w.event_id desc) = 1
),

correcting_checks as (
    select * from core.checks where status = 'fail' and error_class = 'assertion' and corrected_by is not null
),

by_check as (
    select
        c.namespace,
        c.entry_id,
        c.corrected_by as successor_id,
        'failed_check' as source,
        'check ' || c.event_id || ' by ' || c.actor || ' failed an assertion; corrected by ' || c.corrected_by as reason,
        c.ts as linked_at,
        c.event_id,
        null::double as successor_trust
    from (select * from correcting_checks where $all
          union all
          (select c.* from correcting_checks as c semi join link_scope using (namespace, entry_id) where not $all
           union
           select c.* from correcting_checks as c
           semi join link_scope as s on s.namespace = c.namespace and s.entry_id = c.corrected_by where not $all)) as c
),

confirmed as (
    -- a curator confirmed a suggested link: the curator is the actor that knows
    select
        d.namespace,
        d.data::json ->> '$.supersedes' as entry_id,
        d.target_id as successor_id,
        'curator' as source,
        d.reason,
        d.ts as linked_at,
        d.decision_id as event_id,
        null::double as successor_trust
    from raw.curator_decisions as d
    where d.target_kind = 'link' and d.action = 'confirm' and d.ts < $as_of
)
,

proposed as (
    select * from explicit union all select * from by_check union all select * from confirmed
),

named as materialized (
    select namespace, entry_id, entry_hash_of(namespace, entry_id) as entry_hash
    from (select namespace, entry_id from proposed union select namespace, successor_id from proposed)
),

named_rows as materialized (
    -- the entries the links name, read by their hashes (with every_hash, the filter true of every hash:
    -- DuckDB skips the other rows in the scan; joined whole, core.entries was hashed for a handful of links,
    -- 0.1 s at 1M entries, and for none; by key, every entry's strings were read, 25 ms of scan each time
    -- a 1 %-churn night at 1M entries derived candidates)
    select namespace, entry_id, trust from core.entries
    semi join (select entry_hash from named where every_hash(entry_hash)) using (entry_hash)
),

known as (
    select * from named_rows semi join named using (namespace, entry_id)
)

select
    l.namespace, l.entry_id, l.successor_id, l.source, l.reason, l.linked_at, l.event_id,
    old.trust as entry_trust,
    coalesce(l.successor_trust, new.trust) as successor_trust,
    old.entry_id is not null as entry_exists,
    new.entry_id is not null as successor_exists
from proposed as l
left join known as old on old.namespace = l.namespace and old.entry_id = l.entry_id
left join known as new on new.namespace = l.namespace and new.entry_id = l.successor_id
