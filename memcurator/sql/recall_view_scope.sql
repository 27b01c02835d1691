-- Scope of an incremental refresh (changes.refresh_entries: the temp table input_changes holds the entries
-- the inputs changed; the parameter since is the night last derived). Rows added to that scope:
-- An entry's banners name the other side of each open conflict, and whether that side is recallable.
select k.namespace, k.entry_b from core.contradictions as k
semi join input_changes as i on i.namespace = k.namespace and i.entry_id = k.entry_a
union all
select k.namespace, k.entry_a from core.contradictions as k
semi join input_changes as i on i.namespace = k.namespace and i.entry_id = k.entry_b
