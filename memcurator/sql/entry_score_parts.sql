-- One row per entry and per approved principle: the parts of its curation score that do not move with
-- the date (generality, proof and the last recall; the view core.entry_scores adds the recency boost of
-- the night). A principle counts its members' proof and recalls.
-- With $all false, only the entries and principles in the temp table stage_scope
-- (changes.refresh_entries), read by their hashes (stage_hashes: a few more entries may come, which it leaves out);
-- core.entry_usage's without their strings, joined on entry_key (changes.define_entry_key).
with scoped_lifecycle as not materialized (
    -- scoped core.entry_lifecycle
),

scoped_usage as not materialized (
    -- scoped keyed core.entry_usage
),

inputs as (
    select l.namespace, l.entry_id, l.generality, u.proven_count, u.last_recalled_at
    from scoped_lifecycle as l
    inner join scoped_usage as u on u.entry_key = entry_key(l.namespace, l.entry_id, l.entry_hash)

    union all

    select p.namespace, p.principle_id, p.generality, p.proven_count, p.last_recalled_at
    from core.principle_proposals as p
    where p.status = 'approved'
      and ($all or exists (select 1 from stage_scope as s where s.namespace = p.namespace and s.entry_id = p.principle_id))
)

select
    namespace,
    entry_id,
    generality,
    proven_count,
    least(proven_count, $proven_cap) as proven_points,
    last_recalled_at
from inputs
