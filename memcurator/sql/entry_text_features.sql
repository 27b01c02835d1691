-- What the generality and lifecycle rules read from an entry's current text: the regular expressions
-- run once per text, not every night. With $all false, only the entries in the temp table stage_scope
-- (changes.refresh_entries: those core.entries refolded; an event's text never changes, so an entry
-- that keeps its current write keeps its features).
with scoped_entries as not materialized (
    select * from core.entries where $all
    union all
    select * from core.entries semi join stage_scope using (namespace, entry_id) where not $all
)

select
    namespace,
    entry_id,
    last_event_id as source_event_id,
    regexp_matches(norm_text, $imperative) as is_imperative,
    least(len(regexp_extract_all(norm_text, $specific)), 5) as specifics,
    -- lead-ins like "learned today:" frame a lesson; they say nothing about the fact's time
    regexp_matches(regexp_replace(norm_text, $lead_in, ''), $deictic) as has_deictic,
    regexp_matches(norm_text, $operational_state) as has_operational_state,
    regexp_matches(norm_text, $one_off) as is_one_off,
    regexp_matches(norm_text, $chatter) or len(string_split(norm_text, ' ')) < 3 as is_chatter
from scoped_entries
