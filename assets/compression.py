"""Compression stage: near-duplicate pairs and clusters, principle proposals, redundancy penalty."""

from assets._tables import nightly_table_asset
from memcurator import clustering, nearindex

core_near_duplicate_pairs = nightly_table_asset(
    clustering.NEAR_DUPLICATE_PAIRS, nearindex.build_near_duplicate_pairs, [["core", "entries"]], "compression",
    {"pairs": "select count(*) from core.near_duplicate_pairs",
     "exact_pairs": "select count(*) from core.near_duplicate_pairs where method = 'exact'"},
)
core_near_duplicate_clusters = nightly_table_asset(
    clustering.NEAR_DUPLICATE_CLUSTERS, clustering.build_near_duplicate_clusters,
    [["core", "near_duplicate_pairs"], ["core", "contradictions"]], "compression",
    {"clusters": "select count(distinct cluster_id) from core.near_duplicate_clusters",
     "clustered_entries": "select count(*) from core.near_duplicate_clusters"},
)
core_principle_proposals = nightly_table_asset(
    clustering.PRINCIPLE_PROPOSALS, clustering.build_principle_proposals,
    [["core", "near_duplicate_clusters"], ["core", "entry_generality"], ["core", "contradictions"],
     ["raw", "curator_decisions"]], "compression",
    {"proposed": "select count(*) from core.principle_proposals where status = 'proposed'",
     "approved": "select count(*) from core.principle_proposals where status = 'approved'",
     "blocked_by_conflicts": "select count(*) from core.principle_proposals where open_conflicts > 0"},
)
core_entry_importance = nightly_table_asset(
    clustering.ENTRY_IMPORTANCE, clustering.build_entry_importance,
    [["core", "near_duplicate_pairs"], ["core", "contradictions"]], "compression",
    {"penalised_entries": "select count(*) from core.entry_importance where later_similar_writes > 0",
     "under_noise_floor": "select count(*) from core.entry_importance where importance < 0.25"},
)
