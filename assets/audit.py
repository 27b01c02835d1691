"""Audit stage: every curation decision in force, with its rule, inputs and reason."""

from assets._tables import nightly_table_asset
from memcurator import audit

core_curation_audit_log = nightly_table_asset(
    audit.CURATION_AUDIT_LOG, audit.build_audit_log,
    [["core", "entry_lifecycle"], ["core", "supersede_links"], ["core", "principle_proposals"],
     ["core", "entry_importance"], ["core", "contradictions"]], "audit",
    {"decisions": "select count(*) from core.curation_audit_log"},
)
