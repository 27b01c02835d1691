-- Validate landed lines against the event format (docs/events.md).
-- Input: table `lines` (source_file, line_no, text, and seq: the line's rank among the lines of the files
-- judged together). Output: one row per line, `problem` null when the line is a valid event, else
-- 'reason|detail'. Parameters: $max_text_chars, $earliest, $latest, $id_pattern, and the credential
-- patterns of memcurator/secrets.py ({redacted_data} is their nested regexp_replace over the payload,
-- data_json, so no credential reaches any table).
with doc as (
    -- the line as JSON, null where it is not JSON (checked with json_valid and then cast, it was parsed
    -- twice: with the payload read from the extraction below, the validation of the bench's 1M writes took
    -- 5.9-6.0 s instead of 6.6-7.7 s)
    select source_file, line_no, seq, text, try_cast(text as json) as j
    from lines
),

parsed as (
    -- the document parsed once: each field is taken out of it in one multi-path extraction, and read
    -- from there (each JSON function given the line parses it again: with 58 such calls a line, the 1M
    -- writes of the bench's fleet took 79-84 s to ingest, 63.6 s parsed once; its 333k recalls' validation
    -- 9.5 s, 7.9 s)
    select *, j is not null as is_json, json_type(j) as root_t,
        json_extract(j, ['$.id', '$.type', '$.ts', '$.namespace', '$.run_id', '$.agent_id', '$.actor', '$.user_id',
                         '$.data', '$.data.entry_id', '$.data.text', '$.data.class', '$.data.importance',
                         '$.data.trust', '$.data.generality', '$.data.supersedes', '$.data.reason',
                         '$.data.valid_from', '$.data.valid_until', '$.data.tags', '$.data.query',
                         '$.data.results', '$.data.status', '$.data.error_class', '$.data.corrected_by',
                         '$.data.outcome']) as v
    from doc
),

fields as (
    select
        source_file,
        line_no,
        seq,
        text,
        is_json,
        j,
        root_t,
        json_type(v[1]) as id_t,
        v[1] ->> '$' as id,
        json_type(v[2]) as type_t,
        v[2] ->> '$' as type,
        json_type(v[3]) as ts_t,
        try_cast(v[3] ->> '$' as timestamptz) as ts_tz,
        json_type(v[4]) as ns_t,
        v[4] ->> '$' as namespace,
        json_type(v[5]) as run_t,
        v[5] ->> '$' as run_id,
        json_type(v[6]) as agent_t,
        v[6] ->> '$' as agent_id,
        json_type(v[7]) as actor_t,
        v[7] ->> '$' as actor,
        json_type(v[8]) as user_t,
        v[8] ->> '$' as user_id,
        json_type(v[9]) as data_t,
        v[9] as data_json,
        json_type(v[10]) as entry_t,
        v[10] ->> '$' as entry_id,
        json_type(v[11]) as text_t,
        v[11] ->> '$' as body,
        json_type(v[12]) as class_t,
        v[12] ->> '$' as class,
        json_type(v[13]) as imp_t,
        try_cast(v[13] ->> '$' as double) as importance,
        json_type(v[14]) as trust_t,
        try_cast(v[14] ->> '$' as double) as trust,
        json_type(v[15]) as gen_t,
        try_cast(v[15] ->> '$' as double) as generality,
        json_type(v[16]) as sup_t,
        v[16] ->> '$' as supersedes,
        json_type(v[17]) as reason_t,
        v[17] ->> '$' as sup_reason,
        json_type(v[18]) as vfrom_t,
        try_cast(v[18] ->> '$' as timestamptz) as valid_from,
        json_type(v[19]) as vuntil_t,
        try_cast(v[19] ->> '$' as timestamptz) as valid_until,
        json_type(v[20]) as tags_t,
        json_type(v[20], '$[*]') as tag_types,
        json_type(v[21]) as query_t,
        json_type(v[22]) as results_t,
        json_array_length(v[22]) as n_results,
        json_type(v[22], '$[*]') as result_types,
        json_type(v[22], '$[*].entry_id') as result_id_types,
        v[22] ->> '$[*].entry_id' as result_ids,
        json_type(v[22], '$[*].rank') as result_rank_types,
        json_type(v[22], '$[*].injected') as result_inj_types,
        json_type(v[23]) as status_t,
        v[23] ->> '$' as status,
        json_type(v[24]) as eclass_t,
        v[24] ->> '$' as error_class,
        json_type(v[25]) as corr_t,
        v[25] ->> '$' as corrected_by,
        json_type(v[26]) as outcome_t,
        v[26] ->> '$' as outcome
    from parsed
),

judged as (
    select
        *,
        case
            when not is_json then 'invalid_json|line is not valid JSON'
            when root_t <> 'OBJECT' then 'not_an_object|top level must be a JSON object'
            when id_t is null then 'missing_field|id'
            when id_t <> 'VARCHAR' then 'wrong_type|id must be a string'
            when not regexp_full_match(id, $id_pattern) then 'invalid_id|id has characters outside [A-Za-z0-9._:@-] or is too long'
            when type_t is null then 'missing_field|type'
            when type_t <> 'VARCHAR' then 'wrong_type|type must be a string'
            when type not in ('run.start', 'run.end', 'memory.write', 'memory.recall', 'memory.check')
                then 'unknown_type|' || type
            when ts_t is null then 'missing_field|ts'
            when ts_t <> 'VARCHAR' then 'wrong_type|ts must be an RFC 3339 string'
            when ts_tz is null then 'invalid_timestamp|ts is not an RFC 3339 timestamp'
            when ts_tz < $earliest::timestamptz or ts_tz >= $latest::timestamptz
                then 'timestamp_out_of_range|ts outside [' || $earliest || ', ' || $latest || ')'
            when ns_t is null then 'missing_field|namespace'
            when ns_t <> 'VARCHAR' then 'wrong_type|namespace must be a string'
            when not regexp_full_match(namespace, $id_pattern) then 'invalid_id|namespace has characters outside [A-Za-z0-9._:@-] or is too long'
            when run_t is not null and run_t not in ('VARCHAR', 'NULL') then 'wrong_type|run_id must be a string'
            when run_t = 'VARCHAR' and not regexp_full_match(run_id, $id_pattern) then 'invalid_id|run_id'
            when agent_t is not null and agent_t not in ('VARCHAR', 'NULL') then 'wrong_type|agent_id must be a string'
            when agent_t = 'VARCHAR' and not regexp_full_match(agent_id, $id_pattern) then 'invalid_id|agent_id'
            when actor_t is not null and actor_t not in ('VARCHAR', 'NULL') then 'wrong_type|actor must be a string'
            when actor_t = 'VARCHAR' and not regexp_full_match(actor, $id_pattern) then 'invalid_id|actor'
            when user_t is not null and user_t not in ('VARCHAR', 'NULL') then 'wrong_type|user_id must be a string'
            when user_t = 'VARCHAR' and not regexp_full_match(user_id, $id_pattern) then 'invalid_id|user_id'
            when data_t is null then 'missing_field|data'
            when data_t <> 'OBJECT' then 'wrong_type|data must be an object'
            -- memory.write
            when type = 'memory.write' and text_t is null then 'missing_field|data.text'
            when type = 'memory.write' and text_t <> 'VARCHAR' then 'wrong_type|data.text must be a string'
            when type = 'memory.write' and length(trim(body)) = 0 then 'empty_text|data.text is blank'
            when type = 'memory.write' and length(body) > $max_text_chars
                then 'text_too_long|data.text longer than ' || $max_text_chars || ' characters'
            when type = 'memory.write' and class_t is null then 'missing_field|data.class'
            when type = 'memory.write' and class_t <> 'VARCHAR' then 'wrong_type|data.class must be a string'
            when type = 'memory.write'
                and class not in ('identity', 'preference', 'relationship', 'config', 'operational', 'episodic', 'lesson', 'principle')
                then 'invalid_value|data.class ' || class || ' is not a known class'
            when type = 'memory.write' and entry_t is not null and entry_t <> 'VARCHAR' then 'wrong_type|data.entry_id must be a string'
            when type = 'memory.write' and entry_t = 'VARCHAR' and not regexp_full_match(entry_id, $id_pattern) then 'invalid_id|data.entry_id'
            when type = 'memory.write' and imp_t is not null and imp_t not in ('BIGINT', 'UBIGINT', 'DOUBLE') then 'wrong_type|data.importance must be a number'
            when type = 'memory.write' and imp_t is not null and (importance < 0 or importance > 1) then 'invalid_value|data.importance outside [0, 1]'
            when type = 'memory.write' and trust_t is not null and trust_t not in ('BIGINT', 'UBIGINT', 'DOUBLE') then 'wrong_type|data.trust must be a number'
            when type = 'memory.write' and trust_t is not null and (trust < 0 or trust > 1) then 'invalid_value|data.trust outside [0, 1]'
            when type = 'memory.write' and gen_t is not null and gen_t not in ('BIGINT', 'UBIGINT', 'DOUBLE') then 'wrong_type|data.generality must be a number'
            when type = 'memory.write' and gen_t is not null and (generality < 0 or generality > 3) then 'invalid_value|data.generality outside [0, 3]'
            when type = 'memory.write' and sup_t is not null and sup_t <> 'VARCHAR' then 'wrong_type|data.supersedes must be a string'
            when type = 'memory.write' and sup_t = 'VARCHAR' and not regexp_full_match(supersedes, $id_pattern) then 'invalid_id|data.supersedes'
            when type = 'memory.write' and sup_t = 'VARCHAR' and (reason_t is distinct from 'VARCHAR' or length(trim(sup_reason)) = 0)
                then 'supersede_without_reason|data.supersedes needs a non-empty data.reason'
            when type = 'memory.write' and sup_t = 'VARCHAR' and supersedes = entry_id
                then 'supersede_cycle|an entry cannot supersede itself'
            when type = 'memory.write' and vfrom_t is not null and (vfrom_t <> 'VARCHAR' or valid_from is null) then 'invalid_timestamp|data.valid_from'
            when type = 'memory.write' and vuntil_t is not null and (vuntil_t <> 'VARCHAR' or valid_until is null) then 'invalid_timestamp|data.valid_until'
            when type = 'memory.write' and valid_from is not null and valid_until is not null and valid_until < valid_from
                then 'invalid_value|data.valid_until before data.valid_from'
            when type = 'memory.write' and tags_t is not null and tags_t <> 'ARRAY' then 'wrong_type|data.tags must be an array of strings'
            when type = 'memory.write' and tags_t = 'ARRAY' and len(list_filter(tag_types, x -> x <> 'VARCHAR')) > 0
                then 'wrong_type|data.tags must be an array of strings'
            -- memory.recall
            when type = 'memory.recall' and query_t is distinct from 'VARCHAR' then 'missing_field|data.query (string)'
            when type = 'memory.recall' and results_t is distinct from 'ARRAY' then 'missing_field|data.results (array)'
            when type = 'memory.recall' and len(list_filter(result_types, x -> x <> 'OBJECT')) > 0
                then 'wrong_type|data.results items must be objects'
            when type = 'memory.recall' and len(list_filter(result_id_types, x -> x = 'VARCHAR')) <> n_results
                then 'wrong_type|data.results[].entry_id must be a string'
            when type = 'memory.recall' and not list_bool_and(list_transform(result_ids, x -> regexp_full_match(x, $id_pattern)))
                then 'invalid_id|data.results[].entry_id'
            when type = 'memory.recall' and len(list_filter(result_rank_types, x -> x in ('BIGINT', 'UBIGINT'))) <> n_results
                then 'wrong_type|data.results[].rank must be an integer'
            when type = 'memory.recall' and len(list_filter(result_inj_types, x -> x <> 'BOOLEAN')) > 0
                then 'wrong_type|data.results[].injected must be a boolean'
            -- memory.check
            when type = 'memory.check' and entry_t is distinct from 'VARCHAR' then 'missing_field|data.entry_id (string)'
            when type = 'memory.check' and not regexp_full_match(entry_id, $id_pattern) then 'invalid_id|data.entry_id'
            when type = 'memory.check' and (status_t is distinct from 'VARCHAR' or status not in ('pass', 'fail'))
                then 'invalid_value|data.status must be pass or fail'
            when type = 'memory.check' and status = 'fail'
                and (eclass_t is distinct from 'VARCHAR' or error_class not in ('assertion', 'transient'))
                then 'invalid_value|data.error_class must be assertion or transient on a failing check'
            when type = 'memory.check' and corr_t is not null and (corr_t <> 'VARCHAR' or not regexp_full_match(corrected_by, $id_pattern))
                then 'invalid_id|data.corrected_by'
            -- run.end
            when type = 'run.end' and (outcome_t is distinct from 'VARCHAR' or outcome not in ('success', 'failure', 'aborted', 'unknown'))
                then 'invalid_value|data.outcome must be success, failure, aborted or unknown'
        end as problem
    from fields
)

select
    source_file,
    line_no,
    seq,
    text,
    problem,
    id as event_id,
    type,
    (ts_tz at time zone 'UTC') as ts,
    namespace,
    case when run_t = 'VARCHAR' then run_id end as run_id,
    case when agent_t = 'VARCHAR' then agent_id end as agent_id,
    coalesce(case when actor_t = 'VARCHAR' then actor end, 'agent') as actor,
    case when user_t = 'VARCHAR' then user_id end as user_id,
    case when problem is null then {redacted_data} end as data,
    case when problem is null then sha256(json(text)::varchar) end as content_hash
from judged
