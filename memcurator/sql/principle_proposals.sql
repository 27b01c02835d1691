-- One proposal per cluster of at least $min_members entries, with the latest curator decision before $as_of.
-- Canonical member: highest mean similarity to the others, then generality, then proof, then the
-- earliest written, then the entry id. An approved principle keeps the canonical chosen at approval
-- (decision data.canonical_entry_id) while that entry is still a member: a narrow tweak never demotes it.
-- With $all false, only the clusters in the temp table stage_scope (changes.refresh_entries), their members'
-- rows read by the members' hashes (stage_hashes), without their strings: joined on entry_key
-- (changes.define_entry_key).
with scoped_clusters as not materialized (
    select * from core.near_duplicate_clusters where $all
    union all
    select * from core.near_duplicate_clusters semi join stage_scope using (namespace, cluster_id) where not $all
),

scoped_generality as not materialized (
    -- scoped keyed core.entry_generality
),

scoped_usage as not materialized (
    -- scoped keyed core.entry_usage
),

scoped_writes as not materialized (
    -- scoped keyed core.memory_writes
),

members as (
    select
        c.namespace, c.cluster_id, c.entry_id, c.member_count, c.mean_similarity, c.first_written_at,
        g.generality, u.proven_count, u.recall_count, u.last_recalled_at
    from scoped_clusters as c
    inner join scoped_generality as g on g.entry_key = entry_key(c.namespace, c.entry_id, c.entry_hash)
    inner join scoped_usage as u on u.entry_key = g.entry_key
    where c.member_count >= $min_members
),

ranked as (
    select
        *,
        row_number() over (
            partition by namespace, cluster_id
            order by mean_similarity desc, generality desc, proven_count desc, first_written_at, entry_id
        ) as canonical_rank
    from members
),

writers as (
    select c.namespace, c.cluster_id,
        count(distinct w.run_id) as distinct_runs,
        count(distinct w.agent_id) as distinct_agents
    from scoped_clusters as c
    inner join scoped_writes as w on w.entry_key = entry_key(c.namespace, c.entry_id, c.entry_hash)
    where c.member_count >= $min_members
    group by c.namespace, c.cluster_id
),

evidence as (
    select
        namespace, cluster_id,
        count(*) as member_count,
        list(entry_id order by first_written_at, entry_id) as members,
        max(generality) as max_generality,
        sum(proven_count) as proven_count,
        sum(recall_count) as recall_count,
        max(last_recalled_at) as last_recalled_at
    from members
    group by namespace, cluster_id
),

decision as (
-- include cluster_decisions
),

kept as (
    -- the canonical an approval chose, while it is still a member (an equi-join: as a condition of the
    -- left join below DuckDB planned a nested loop, quadratic in clusters)
    select m.namespace, m.cluster_id, m.entry_id, m.generality
    from members as m
    inner join decision as d
        on d.namespace = m.namespace and d.cluster_id = m.cluster_id and d.approved_canonical = m.entry_id
    where d.action = 'approve'
),

chosen as (
    select
        e.namespace, e.cluster_id,
        coalesce(kept.entry_id, first.entry_id) as canonical_entry_id,
        coalesce(kept.generality, first.generality) as canonical_generality,
        d.action, d.curator, d.decided_at, d.reason
    from evidence as e
    inner join ranked as first on first.namespace = e.namespace and first.cluster_id = e.cluster_id and first.canonical_rank = 1
    left join decision as d on d.namespace = e.namespace and d.cluster_id = e.cluster_id
    left join kept on kept.namespace = e.namespace and kept.cluster_id = e.cluster_id
),

conflicted as (
    -- a proposal whose members disagree must not be approved into a principle
    select c.namespace, c.cluster_id, count(*) as open_conflicts
    from core.contradictions as k
    inner join scoped_clusters as c on c.namespace = k.namespace and c.entry_id = k.entry_a
    inner join scoped_clusters as c2  -- (in the cluster of c)
        on c2.namespace = k.namespace and c2.entry_id = k.entry_b and c2.cluster_id = c.cluster_id
    where k.status = 'open'
    group by c.namespace, c.cluster_id
),

better as (
    select c.namespace, c.cluster_id, arg_max(m.entry_id, (m.generality, m.entry_id)) as better_canonical_id
    from chosen as c
    inner join members as m using (namespace, cluster_id)
    where c.action = 'approve' and m.generality > c.canonical_generality and m.first_written_at > c.decided_at
    group by c.namespace, c.cluster_id
),

stored_texts as (
    -- a stored proposal's text stands while its canonical is the same entry and no input of this night
    -- changed that entry (core.entries records each entry it refolds): read again, the texts of canonicals
    -- spread through core.entries read most of its text column in a fresh process (0.2-0.3 s of a night
    -- with no new file at 1M entries, after a compaction; the bench's store replayed in the lab)
    select p.namespace, p.cluster_id, p.canonical_entry_id, p.text
    from core.principle_proposals as p
    semi join stage_scope using (namespace, cluster_id)
    anti join input_changes as i on i.namespace = p.namespace and i.entry_id = p.canonical_entry_id
    where not $all
),

kept_texts as (
    select s.namespace, s.cluster_id, s.text
    from stored_texts as s
    semi join chosen as c
        on c.namespace = s.namespace and c.cluster_id = s.cluster_id and c.canonical_entry_id = s.canonical_entry_id
),

read_texts as (
    -- the text of the canonical member only (members carry no texts: 1M texts read and ranked for 55k
    -- clusters), read by the canonicals' hashes, the clusters' own (read with the members' entries, every
    -- member's text was read)
    select c.namespace, c.cluster_id, c.canonical_entry_id, m.entry_hash
    from chosen as c
    anti join kept_texts as k using (namespace, cluster_id)
    inner join scoped_clusters as m
        on m.namespace = c.namespace and m.cluster_id = c.cluster_id and m.entry_id = c.canonical_entry_id
),

texts as (
    select * from kept_texts
    union all
    select r.namespace, r.cluster_id, e.text
    from read_texts as r
    inner join (  -- (every_hash: the filter true of every hash)
        select namespace, entry_id, text from core.entries
        semi join (select entry_hash from read_texts where every_hash(entry_hash)) using (entry_hash)
    ) as e on e.namespace = r.namespace and e.entry_id = r.canonical_entry_id
)

select
    e.namespace,
    e.cluster_id,
    'p_' || substr(e.cluster_id, 3) as principle_id,
    c.canonical_entry_id,
    t.text,
    least(3.0, e.max_generality + 0.5) as generality,
    e.member_count,
    e.members,
    w.distinct_runs,
    w.distinct_agents,
    e.proven_count,
    e.recall_count,
    e.last_recalled_at,
    case c.action when 'approve' then 'approved' when 'reject' then 'rejected' when 'unmerge' then 'unmerged'
        else 'proposed' end as status,
    c.curator as decided_by,
    c.decided_at,
    c.reason as decision_reason,
    b.better_canonical_id,
    coalesce(k.open_conflicts, 0) as open_conflicts
from evidence as e
inner join chosen as c using (namespace, cluster_id)
inner join texts as t using (namespace, cluster_id)
inner join writers as w using (namespace, cluster_id)
left join better as b using (namespace, cluster_id)
left join conflicted as k using (namespace, cluster_id)
order by e.namespace, e.member_count desc, e.recall_count desc, e.cluster_id
