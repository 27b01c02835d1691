-- What the generality and lifecycle rules read from an entry's current text: the regular expressions
-- run once per text, not every night. With $all false, only the entries in the temp table stage_scope
-- (changes.refresh_entries: those core.entries refolded; an event's text never changes, so an entry
-- that keeps its current write keeps its features).
-- They are found by their hashes (stage_hashes: a few more entries may come, which changes.refresh_entries
-- leaves out).
-- The scope's texts are read by row id (store.rows_by_key): the entries refolded tonight were inserted
-- again at the end of core.entries, so only its last row groups' texts are read (by key, DuckDB read the
-- texts of every entry: a 1 %-churn night at 1M entries, first read in the process, 0.39-0.47 s; 0.07 s).
with scoped_entries as not materialized (
    select * from core.entries where $all
    union all
    select * from core.entries where not $all and rowid in (
        select rowid from core.entries semi join stage_hashes using (entry_hash))
),

marked as (  -- whether the text has any of the markers below (lifecycle.ANY_MARKER): most have none
    select *, regexp_matches(norm_text, $any_marker) as marked from scoped_entries
)

select
    namespace,
    entry_id,
    last_event_id as source_event_id,
    -- the patterns anchored at the start read only the start (lifecycle.IMPERATIVE_READS)
    regexp_matches(left(norm_text, $imperative_reads), $imperative) as is_imperative,
    case when marked then least(len(regexp_extract_all(norm_text, $specific)), 5) else 0 end as specifics,
    -- lead-ins like "learned today:" frame a lesson; they say nothing about the fact's time (the text is
    -- copied without its lead-in only when it has one)
    case when marked then regexp_matches(case when regexp_matches(left(norm_text, $lead_in_reads), $lead_in)
                                              then regexp_replace(norm_text, $lead_in, '') else norm_text end,
                                         $deictic)
         else false end as has_deictic,
    case when marked then regexp_matches(norm_text, $operational_state) else false end as has_operational_state,
    case when marked then regexp_matches(norm_text, $one_off) else false end as is_one_off,
    -- under three words: at most one space (splitting the text into words took 0.88 s at 1M texts)
    regexp_matches(norm_text, $chatter) or regexp_full_match(norm_text, '[^ ]* ?[^ ]*') as is_chatter
from marked
