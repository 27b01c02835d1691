-- One row per (namespace, run_id) from run.start / run.end events with ts < $as_of.
select
    namespace,
    run_id,
    max(agent_id) as agent_id,
    min(ts) filter (where type = 'run.start') as started_at,
    max(ts) filter (where type = 'run.end') as ended_at,
    arg_max(data::json ->> '$.outcome', ts) filter (where type = 'run.end') as outcome,
    arg_min(data::json ->> '$.task', ts) filter (where type = 'run.start') as task,
    $as_of as as_of
from raw.events
where type in ('run.start', 'run.end') and ts < $as_of and run_id is not null
group by namespace, run_id
order by namespace, run_id
