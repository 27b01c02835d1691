"""Lifecycle stage: agent trust and the state of every entry."""

from assets._tables import nightly_table_asset
from memcurator import lifecycle

core_entry_generality = nightly_table_asset(
    lifecycle.ENTRY_GENERALITY, lifecycle.build_entry_generality, [["core", "entries"], ["core", "entry_usage"]],
    "lifecycle")
core_agent_trust = nightly_table_asset(
    lifecycle.AGENT_TRUST, lifecycle.build_agent_trust, [["core", "memory_writes"], ["core", "checks"]], "lifecycle")
core_entry_lifecycle = nightly_table_asset(
    lifecycle.ENTRY_LIFECYCLE, lifecycle.build_entry_lifecycle,
    [["core", "entries"], ["core", "entry_usage"], ["core", "supersede_links"], ["core", "agent_trust"],
     ["core", "recall_results"], ["core", "entry_generality"], ["core", "entry_importance"],
     ["core", "near_duplicate_clusters"], ["core", "principle_proposals"], ["core", "contradictions"]],
    "lifecycle",
    {"active_entries": "select count(*) from core.entry_lifecycle where state in ('active', 'reverify')",
     "archived_entries": "select count(*) from core.entry_lifecycle where state = 'archived'",
     "held_entries": "select count(*) from core.entry_lifecycle where state = 'held'",
     "expired_entries": "select count(*) from core.entry_lifecycle where state = 'expired'",
     "flagged_for_review": "select count(*) from core.entry_lifecycle where flagged_for_review"},
)
