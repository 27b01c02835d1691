-- Split judged lines into new events, duplicates of known events, and quarantine.
-- The first occurrence of an event id wins: first what is already in raw.events, then line order.
create or replace temp table judged_dedup as
with firsts as (
    -- per event id, its first line in the file and that line's content, aggregated on these narrow
    -- columns (a window over the whole lines carried every column: the split of the bench's 1M writes
    -- 5.5 s, this 4.7 s)
    select event_id, min(line_no) as first_line, arg_min(content_hash, line_no) as first_hash
    from judged
    where problem is null
    group by event_id
),

classified as (
    select
        v.*,
        case
            when e.event_id is not null and e.content_hash = v.content_hash then 'duplicate'
            when e.event_id is not null then 'conflict'
            when v.line_no = f.first_line then 'new'
            when v.content_hash = f.first_hash then 'duplicate'
            else 'conflict'
        end as outcome_kind
    from judged as v
    inner join firsts as f using (event_id)
    left join raw.events as e on e.event_id = v.event_id
    where v.problem is null
)

select
    -- the line's text only where it is quarantined (raw.quarantine keeps it): carried for every line, it
    -- made the split of the bench's 1M writes spill to disk
    source_file, line_no, case when outcome_kind = 'conflict' then text end as text, event_id, type, ts,
    namespace, run_id, agent_id, actor, user_id, data, content_hash,
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

-- a view, not a copy of most of the file's lines (DuckDB's temp data at this split of the bench's 1M
-- writes: 3.5 GB, half of it spilled to disk; 2.2 GB)
create or replace temp view new_events as
select * from judged_dedup where outcome = 'new';
