-- Split judged lines into new events, duplicates of known events, and quarantine.
-- The first occurrence of an event id wins: first what is already in raw.events, then line order.
create or replace temp table judged_dedup as
with valid as (
    select
        *,
        row_number() over (partition by event_id order by line_no) as occurrence,
        first_value(content_hash) over (partition by event_id order by line_no) as first_hash
    from judged
    where problem is null
),

classified as (
    select
        v.*,
        case
            when e.event_id is not null and e.content_hash = v.content_hash then 'duplicate'
            when e.event_id is not null then 'conflict'
            when v.occurrence = 1 then 'new'
            when v.content_hash = v.first_hash then 'duplicate'
            else 'conflict'
        end as outcome_kind
    from valid as v
    left join raw.events as e on e.event_id = v.event_id
)

select
    source_file, line_no, text, event_id, type, ts, namespace, run_id, agent_id, actor, user_id,
    data, content_hash,
    case when outcome_kind = 'conflict' then 'quarantine' else outcome_kind end as outcome,
    case when outcome_kind = 'conflict'
        then 'duplicate_id_conflict|event id ' || event_id || ' was already ingested with different content'
    end as problem
from classified

union all

select
    source_file, line_no, text, event_id, type, ts, namespace, run_id, agent_id, actor, user_id,
    data, content_hash, 'quarantine' as outcome, problem
from judged
where problem is not null;

create or replace temp table new_events as
select * from judged_dedup where outcome = 'new';
