"""Contradictions stage: supersede links with their verdicts, conflicts, and the curators' worklist."""

from assets._tables import nightly_table_asset
from memcurator import contradictions

core_supersede_links = nightly_table_asset(
    contradictions.SUPERSEDE_LINKS, contradictions.build_supersede_links,
    [["core", "entries"], ["core", "checks"]], "contradictions",
    {"accepted_links": "select count(*) from core.supersede_links where status = 'accepted'",
     "trust_guarded_links": "select count(*) from core.supersede_links where status = 'trust_guarded'",
     "cycle_rejected_links": "select count(*) from core.supersede_links where status = 'cycle_rejected'"},
)
core_contradictions = nightly_table_asset(
    contradictions.CONTRADICTIONS, contradictions.build_contradictions,
    [["core", "supersede_links"], ["core", "near_duplicate_pairs"], ["core", "entry_usage"],
     ["raw", "curator_decisions"]], "contradictions",
    {"open_conflicts": "select count(*) from core.contradictions where status = 'open'",
     "detected_conflicts": "select count(*) from core.contradictions where kind = 'detected'",
     "explicit_links": "select count(*) from core.contradictions where kind in ('explicit', 'failed_check')"},
)
core_contested_entries = nightly_table_asset(
    contradictions.CONTESTED_ENTRIES, contradictions.build_contested_entries,
    [["core", "contradictions"], ["core", "entry_lifecycle"]], "contradictions",
    {"contested_entries": "select count(*) from core.contested_entries"},
)
core_supersede_suggestions = nightly_table_asset(
    contradictions.SUPERSEDE_SUGGESTIONS, contradictions.build_supersede_suggestions,
    [["core", "near_duplicate_pairs"], ["core", "contradictions"], ["core", "entry_lifecycle"]], "contradictions",
    {"entries_with_suggestions": "select count(distinct namespace || entry_id) from core.supersede_suggestions"},
)
