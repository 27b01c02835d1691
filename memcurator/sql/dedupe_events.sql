-- Split judged lines into new events, duplicates of known events, and quarantine.
-- The first occurrence of an event id wins: first what is already in raw.events, then the order of the lines
-- judged together (seq: the files in landing order, each file's lines in order).
-- One narrow row per line that is not a new event (a duplicate, or quarantined with its problem): the lines
-- stay in judged, and the views below read them from there (a copy of the valid lines' columns made this
-- split of the bench's 1M writes spill at the default memory limit: 1.8 s, 0.98 s with 8 GB; this 0.3 s).
-- The new events are the valid lines not listed, so a clean file's list is empty and reading them again
-- (the lake's copy per day) joins next to nothing.
create or replace temp table judged_dedup as
with firsts as (
    -- per event id, its first line in the batch and that line's content, aggregated on these narrow
    -- columns (a window over the whole lines carried every column: the split of the bench's 1M writes
    -- 5.5 s, this 4.7 s)
    select event_id, min(seq) as first_seq, arg_min(content_hash, seq) as first_hash
    from judged
    where problem is null
    group by event_id
),

classified as (
    select
        v.seq,
        v.event_id,
        case
            when e.event_id is not null and e.content_hash = v.content_hash then 'duplicate'
            when e.event_id is not null then 'conflict'
            when v.seq = f.first_seq then 'new'
            when v.content_hash = f.first_hash then 'duplicate'
            else 'conflict'
        end as outcome_kind
    from judged as v
    inner join firsts as f using (event_id)
    left join raw.events as e on e.event_id = v.event_id
    where v.problem is null
)

select
    seq,
    case when outcome_kind = 'conflict' then 'quarantine' else outcome_kind end as outcome,
    case when outcome_kind = 'conflict'
        then 'duplicate_id_conflict|event id ' || event_id || ' was already ingested with different content'
    end as problem
from classified
where outcome_kind <> 'new'

union all

select seq, 'quarantine' as outcome, problem
from judged
where problem is not null;

-- views, not copies of most of the file's lines (DuckDB's temp data at this split of the bench's 1M
-- writes: 3.5 GB, half of it spilled to disk; 2.2 GB)
create or replace temp view new_events as
select * from judged anti join judged_dedup using (seq) where problem is null;

create or replace temp view quarantined_lines as
select v.source_file, v.line_no, v.text, d.problem
from judged as v
inner join judged_dedup as d using (seq)
where d.outcome = 'quarantine';
