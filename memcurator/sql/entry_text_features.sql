-- What the generality and lifecycle rules read from an entry's current text: the regular expressions
-- run once per text, not every night. Entries whose current version (the write it was read from) is
-- already in the table are skipped: an event's text never changes (core.memory_writes keeps its rows
-- by event id on the same ground), and comparing write ids reads no text, where a hash of each text
-- read them all every night.
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
    regexp_matches(norm_text, $chatter) or len(string_split(norm_text, ' ')) < 3 as is_chatter,
    $as_of as as_of
from core.entries as e
anti join core.entry_text_features as f
    on f.namespace = e.namespace and f.entry_id = e.entry_id and f.source_event_id = e.last_event_id
