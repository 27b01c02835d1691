"""Contradictions stage: supersede links with their verdicts."""

from assets._tables import nightly_table_asset
from memcurator import contradictions

core_supersede_links = nightly_table_asset(
    contradictions.SUPERSEDE_LINKS, contradictions.build_supersede_links,
    [["core", "entries"], ["core", "checks"]], "contradictions",
    {"accepted_links": "select count(*) from core.supersede_links where status = 'accepted'",
     "trust_guarded_links": "select count(*) from core.supersede_links where status = 'trust_guarded'",
     "cycle_rejected_links": "select count(*) from core.supersede_links where status = 'cycle_rejected'"},
)
