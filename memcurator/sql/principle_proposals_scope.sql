-- Scope of an incremental refresh (changes.refresh_entries: the temp table input_changes holds the entries
-- the inputs changed; the parameter since is the night last derived). Rows added to that scope:
-- The clusters to derive again: those with a member whose inputs changed (as they are now, or as the
-- stored proposal lists them), and those whose latest curator decision is not the one their proposal
-- carries (a decision may land after the night its time falls in).
-- (a decision never leaves but by a purge, after which the next night derives everything, or for an
-- earlier night, which does too)
with decision as (
-- include cluster_decisions
)
select c.namespace, c.cluster_id from core.near_duplicate_clusters as c semi join input_changes
using (namespace, entry_id)
union all
select p.namespace, p.cluster_id
from (select namespace, cluster_id, unnest(members) as entry_id from core.principle_proposals) as p
semi join input_changes using (namespace, entry_id)
union all
select d.namespace, d.cluster_id
from decision as d left join core.principle_proposals as p using (namespace, cluster_id)
where p.cluster_id is null or p.decided_by is distinct from d.curator or p.decided_at is distinct from d.decided_at
   or p.decision_reason is distinct from d.reason
   or p.status is distinct from case d.action when 'approve' then 'approved' when 'reject' then 'rejected'
                                 when 'unmerge' then 'unmerged' end
   or (d.action = 'approve' and p.canonical_entry_id is distinct from d.approved_canonical)
