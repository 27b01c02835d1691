-- What was recallable in one namespace at a past instant $at: the version current then, not
-- replaced by an accepted link written before $at, and valid then (validity is about the fact).
with versions as (
    select *
    from core.memory_writes
    where namespace = $namespace and ts < $at
    qualify row_number() over (partition by entry_id order by ts desc, event_id desc) = 1
),

replaced as (
    select distinct entry_id
    from core.supersede_links
    where namespace = $namespace and status = 'accepted' and linked_at < $at
)

select
    v.entry_id,
    v.text,
    v.class,
    'active' as tier,
    0.0 as score,
    []::varchar[] as banners,
    v.valid_from,
    v.valid_until,
    v.ts as last_written_at
from versions as v
where v.entry_id not in (select entry_id from replaced)
  and (v.valid_from is null or v.valid_from <= $at)
  and (v.valid_until is null or v.valid_until > $at)
