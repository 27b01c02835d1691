-- Scope of an incremental refresh (changes.refresh_entries: the temp table input_changes holds the entries
-- the inputs changed; the parameter since is the night last derived). Rows added to that scope:
-- Entries whose rows move with another's change or with the date, derived again beside the changed ones.
-- every member of a cluster one of whose members changed (the cluster's writes revive them all)
select c.namespace, c.entry_id from core.near_duplicate_clusters as c
semi join (select namespace, cluster_id from core.near_duplicate_clusters semi join input_changes
           using (namespace, entry_id)) as k using (namespace, cluster_id)
union all
-- every case record of a namespace where one changed (they are capped by count, newest first)
select namespace, entry_id from core.entries
where class = 'episodic' and namespace in (
    select i.namespace from input_changes as i
    left join core.entries as n using (namespace, entry_id)
    left join core.entry_lifecycle as o using (namespace, entry_id)
    where n.class = 'episodic' or o.class = 'episodic')
union all
-- every entry of a namespace that began or ceased to record recalls
select namespace, entry_id from core.entries
where namespace in ((select namespace from core.recall_results
                     except select namespace from core.entry_lifecycle where recall_observed)
                    union (select namespace from core.entry_lifecycle where recall_observed
                           except select namespace from core.recall_results))
union all
-- entries a date rule may move tonight
select namespace, entry_id from core.entry_lifecycle where next_change_at <= $as_of::timestamp + interval 1 minute
