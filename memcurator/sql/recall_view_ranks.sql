-- The ranks of the namespaces whose rows a night derived again (temp table stage_scope), over all their
-- rows: tier, then score, then latest write, then entry id (the order recall_view.sql ranks in).
update mart.recall_ranking as r
set rank = n.rank
from (
    select namespace, entry_id,
        row_number() over (
            partition by namespace
            order by case when tier = 'active' then 0 else 1 end, score desc, last_written_at desc, entry_id
        ) as rank
    from mart.recall_ranking
    where namespace in (select namespace from stage_scope)
) as n
where r.namespace = n.namespace and r.entry_id = n.entry_id and r.rank <> n.rank
