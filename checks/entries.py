"""Checks on the entries stage: keys, conservation of writes, coverage of usage."""

from checks._sql import schema_check, violation_check
from memcurator.tables import CHECKS, ENTRIES, ENTRY_USAGE, MEMORY_WRITES, RECALL_RESULTS, RUNS

entry_keys_are_unique = violation_check(
    ["core", "entries"], "entry_keys_are_unique",
    "One row per (namespace, entry_id).",
    "select count(*) from (select 1 from core.entries group by namespace, entry_id having count(*) > 1)",
)

every_write_is_folded_into_an_entry = violation_check(
    ["core", "entries"], "every_write_is_folded_into_an_entry",
    "Conservation: the version counts of the entries add up to the memory writes before as_of.",
    "select abs((select count(*) from core.memory_writes) - (select coalesce(sum(version_count), 0) from core.entries))",
)

every_valid_write_event_is_in_memory_writes = violation_check(
    ["core", "memory_writes"], "every_valid_write_event_is_in_memory_writes",
    "Conservation: every memory.write event in raw.events before as_of has a row here.",
    """select count(*) from raw.events as e
       where e.type = 'memory.write'
         and e.ts < (select coalesce(max(as_of), '-infinity'::timestamp) from work.event_reads  -- the table's night
                     where table_name = 'core.memory_writes')
         and e.event_id not in (select event_id from core.memory_writes)""",
)

usage_covers_every_entry = violation_check(
    ["core", "entry_usage"], "usage_covers_every_entry",
    "Exactly one usage row per entry.",
    """select (select count(*) from core.entries) - (select count(*) from core.entry_usage)
            + (select count(*) from core.entry_usage u anti join core.entries e using (namespace, entry_id))""",
)

schema_checks = [schema_check(t) for t in (MEMORY_WRITES, ENTRIES, RECALL_RESULTS, CHECKS, RUNS, ENTRY_USAGE)]
