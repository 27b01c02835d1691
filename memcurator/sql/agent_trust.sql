-- One row per (namespace, agent_id) that wrote an entry: trust from the checks of its entries.
-- trust = (passes + 1) / (passes + failed assertions + 2); transient failures do not count.
with authored as (
    select namespace, entry_id, agent_id
    from core.memory_writes
    where agent_id is not null
    qualify row_number() over (partition by namespace, entry_id order by ts desc, event_id desc) = 1
),

judged as (
    select
        a.namespace,
        a.agent_id,
        count(*) filter (where c.status = 'pass') as passes,
        count(*) filter (where c.status = 'fail' and c.error_class = 'assertion') as failed_assertions,
        min(c.ts) filter (where c.status = 'fail' and c.error_class = 'assertion') as first_failed_at
    from authored as a
    left join core.checks as c using (namespace, entry_id)
    group by a.namespace, a.agent_id
)

select
    namespace,
    agent_id,
    passes,
    failed_assertions,
    (passes + 1.0) / (passes + failed_assertions + 2.0) as trust,
    first_failed_at,
    $as_of as as_of
from judged
order by namespace, agent_id
