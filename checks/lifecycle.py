"""Checks on lifecycle, ranking and audit."""

from checks._sql import schema_check, violation_check
from memcurator.audit import CURATION_AUDIT_LOG
from memcurator.lifecycle import AGENT_TRUST, ENTRY_LIFECYCLE
from memcurator.ranking import ENTRY_SCORES, RECALL_VIEW

schema_checks = [schema_check(t) for t in (AGENT_TRUST, ENTRY_LIFECYCLE, ENTRY_SCORES, RECALL_VIEW, CURATION_AUDIT_LOG)]

every_entry_has_one_state = violation_check(
    ["core", "entry_lifecycle"], "every_entry_has_exactly_one_state",
    "Conservation: one lifecycle row per entry, none missing, none extra.",
    # the keys without exactly one lifecycle row or without their entry, counted in one aggregation over
    # both tables (two anti joins and a distinct count read them three times: 0.48-0.66 s at 1M entries,
    # this 0.26-0.34 s)
    """select count(*) from (
         select count(*) filter (where is_entry) as entries, count(*) filter (where not is_entry) as states
         from (select namespace, entry_id, true as is_entry from core.entries
               union all select namespace, entry_id, false from core.entry_lifecycle)
         group by namespace, entry_id)
       where states <> 1 or entries = 0""",
)

no_archived_expired_or_superseded_entry_in_recall_view = violation_check(
    ["mart", "recall_view"], "no_archived_expired_or_superseded_entry_in_recall_view",
    "The recall view holds only active, reverify, held and case entries.",
    # the view's rows as stored (mart.recall_ranking: one per row of the view, without the text the
    # view joins in, which took 1.1 s a read at 1M entries)
    """select count(*) from mart.recall_ranking r join core.entry_lifecycle l using (namespace, entry_id)
       where l.state not in ('active', 'reverify', 'held', 'case') or r.state <> l.state""",
)

failed_checks_are_shown_above_the_entry = violation_check(
    ["mart", "recall_view"], "failed_checks_are_shown_above_the_entry",
    "Every recallable entry whose latest non-transient check failed carries a WARNING banner.",
    """select count(*) from mart.recall_ranking r join core.entry_usage u using (namespace, entry_id)
       where u.last_check_status = 'fail' and not list_contains(list_transform(r.banners, b -> b like 'WARNING%'), true)""",
)

every_non_active_entry_has_an_audit_row = violation_check(
    ["core", "curation_audit_log"], "every_non_active_entry_has_an_audit_row",
    "Every entry outside the active state has a decision in the audit log.",
    """select count(*) from core.entry_lifecycle l
       where l.state <> 'active' and not exists (
         select 1 from core.curation_audit_log a
         where a.namespace = l.namespace and a.entity_kind = 'entry' and a.entity_id = l.entry_id)""",
)
