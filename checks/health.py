"""Checks on store health."""

from checks._sql import schema_check, violation_check
from memcurator.health_history import STORE_HEALTH

store_health_schema = schema_check(STORE_HEALTH)

one_health_row_per_namespace_and_night = violation_check(
    ["mart", "store_health"], "one_health_row_per_namespace_and_night",
    "The history holds one row per (namespace, night).",
    "select count(*) from (select 1 from mart.store_health group by night, namespace having count(*) > 1)",
)

injected_entries_are_not_mostly_old_and_unverified = violation_check(
    ["mart", "store_health"], "injected_entries_are_not_mostly_old_and_unverified",
    "Soft signal: in no namespace are more than half of last month's injections older than 90 days "
    "and unverified for 90 days.",
    """select count(*) from mart.store_health
       where as_of = (select max(as_of) from mart.store_health) and injected_old_unverified_share > 0.5""",
    blocking=False,
)
