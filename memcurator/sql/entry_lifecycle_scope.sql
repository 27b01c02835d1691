-- Scope of an incremental refresh (changes.refresh_entries: the temp table input_changes holds the entries
-- the inputs changed; the parameter since is the night last derived). Rows added to that scope:
-- Entries whose rows move with another's change or with the date, derived again beside the changed ones.
-- every member of a cluster one of whose members changed (the cluster's writes revive them all)
select c.namespace, c.entry_id from core.near_duplicate_clusters as c
semi join (select namespace, cluster_id from core.near_duplicate_clusters semi join input_changes
           using (namespace, entry_id)) as k using (namespace, cluster_id)
union all
-- every case record of a namespace where one changed (they are capped by count, newest first): the
-- case records, as they are and as they were, are taken first and joined to the changes (joining every
-- entry's class to them took 0.23 s of CPU in a 1 %-churn night at 1M entries)
select namespace, entry_id from core.entries
where class = 'episodic' and namespace in (
    select namespace from input_changes
    semi join (select namespace, entry_id from core.entries where class = 'episodic'
               union all
               select namespace, entry_id from core.entry_lifecycle where class = 'episodic')
    using (namespace, entry_id))
union all
-- every entry of a namespace that began or ceased to record recalls: the namespaces on one side only
-- (each side's made distinct first, and read once: "except" over the 1M recalled rows took 0.11 s of that
-- night, two "except"s of the distinct ones 0.06 s)
select namespace, entry_id from core.entries
where namespace in (select coalesce(r.namespace, o.namespace)
                    from (select distinct namespace from core.recall_results) as r
                    full join (select distinct namespace from core.entry_lifecycle where recall_observed) as o
                        using (namespace)
                    where r.namespace is null or o.namespace is null)
union all
-- entries a date rule may move tonight
select namespace, entry_id from core.entry_lifecycle where next_change_at <= $as_of::timestamp + interval 1 minute
