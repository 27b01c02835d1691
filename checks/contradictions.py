"""Checks on supersession."""

import dagster as dg

from checks._sql import schema_check, violation_check
from memcurator.contradictions import CONTESTED_ENTRIES, CONTRADICTIONS, SUPERSEDE_LINKS, cycle_members
from pipelines.resources import StoreResource

supersede_links_schema = schema_check(SUPERSEDE_LINKS)

supersede_links_stay_in_their_namespace = violation_check(
    ["core", "supersede_links"], "accepted_links_join_entries_of_one_namespace",
    "Every accepted link joins two entries of the same namespace.",
    """select count(*) from core.supersede_links l
       where l.status = 'accepted' and (
         not exists (select 1 from core.entries e where e.namespace = l.namespace and e.entry_id = l.entry_id)
         or not exists (select 1 from core.entries e where e.namespace = l.namespace and e.entry_id = l.successor_id))""",
)


@dg.asset_check(asset=dg.AssetKey(["core", "supersede_links"]), name="accepted_supersede_graph_is_acyclic",
                description="No two entries replace each other through accepted links.", blocking=True)
def accepted_supersede_graph_is_acyclic(store: StoreResource) -> dg.AssetCheckResult:
    with store.writer() as conn:
        links = conn.execute(
            "select namespace, entry_id, successor_id from core.supersede_links where status = 'accepted'").pl()
    on_cycles = cycle_members(links)
    return dg.AssetCheckResult(passed=on_cycles.height == 0,
                               metadata={"entries_on_cycles": dg.MetadataValue.int(on_cycles.height)})


no_contested_entry_is_recalled_without_its_conflict = violation_check(
    ["mart", "recall_view"], "no_contested_entry_is_recalled_without_its_conflict",
    "Every entry of the curators' worklist that is in the recall view carries a CONFLICT banner.",
    """select count(*) from core.contested_entries c join mart.recall_ranking r using (namespace, entry_id)
       where not list_contains(list_transform(r.banners, b -> b like 'CONFLICT%'), true)""",
)

contradictions_schema = schema_check(CONTRADICTIONS)
contested_entries_schema = schema_check(CONTESTED_ENTRIES)
