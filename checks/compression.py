"""Checks on compression: namespace isolation and the near-duplicate rate of the active set."""

import dagster as dg

from checks._sql import schema_check, violation_check
from memcurator.clustering import ENTRY_IMPORTANCE, NEAR_DUPLICATE_CLUSTERS, NEAR_DUPLICATE_PAIRS, PRINCIPLE_PROPOSALS
from memcurator.health import active_set_near_duplicate_rate
from pipelines.resources import CurationResource, StoreResource

schema_checks = [schema_check(t) for t in (NEAR_DUPLICATE_PAIRS, NEAR_DUPLICATE_CLUSTERS, PRINCIPLE_PROPOSALS,
                                           ENTRY_IMPORTANCE)]

near_duplicate_pairs_never_cross_namespaces = violation_check(
    ["core", "near_duplicate_pairs"], "near_duplicate_pairs_join_entries_of_their_namespace",
    "Both sides of every pair are entries of the pair's namespace.",
    # the pairs with a side that is no entry of their namespace: both sides read against the entries in one
    # anti join (a "not exists" per side joined the entries twice: 0.28-0.44 s at 1M entries, this 0.16-0.23 s)
    """select count(*) from (
         select distinct namespace, entry_a, entry_b from (
           select namespace, entry_a, entry_b, entry_a as entry_id from core.near_duplicate_pairs
           union all
           select namespace, entry_a, entry_b, entry_b from core.near_duplicate_pairs
         ) anti join core.entries using (namespace, entry_id))""",
)

clusters_are_within_one_namespace = violation_check(
    ["core", "near_duplicate_clusters"], "clusters_are_within_one_namespace",
    "No cluster id appears in two namespaces.",
    "select count(*) from (select cluster_id from core.near_duplicate_clusters group by 1 having count(distinct namespace) > 1)",
)

approved_principles_have_no_open_conflicts = violation_check(
    ["core", "principle_proposals"], "approved_principles_have_no_open_conflicts",
    "A principle is never approved over members that contradict each other.",
    "select count(*) from core.principle_proposals where status = 'approved' and open_conflicts > 0",
)


@dg.asset_check(asset=dg.AssetKey(["mart", "recall_view"]), name="active_set_near_duplicate_rate_below_limit",
                description="Share of active-tier entries that restate another active entry (verified near-duplicate), "
                            "per namespace and overall, is below near_duplicate_rate_limit. A soft signal.",
                blocking=False)
def active_set_near_duplicate_rate_below_limit(store: StoreResource, curation: CurationResource) -> dg.AssetCheckResult:
    limit = curation.config().near_duplicate_rate_limit
    with store.writer() as conn:
        overall, per_namespace = active_set_near_duplicate_rate(conn)
    # counts only: namespace ids can name people, and Dagster's run history is out of a purge's reach;
    # the per-namespace rates are in mart.store_health
    return dg.AssetCheckResult(
        passed=overall <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"overall_rate": dg.MetadataValue.float(overall), "limit": dg.MetadataValue.float(limit),
                  "namespaces_over_limit": dg.MetadataValue.int(int((per_namespace["rate"] > limit).sum())),
                  "worst_namespace_rate": dg.MetadataValue.float(float(per_namespace["rate"].max() or 0.0)),
                  "per_namespace": dg.MetadataValue.text("select night, namespace, duplicate_rate from "
                                                         "analyst.store_health order by night desc, duplicate_rate desc")},
    )
