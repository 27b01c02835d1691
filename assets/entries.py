"""Entries stage: the log folded into entries, recalls, checks, runs and usage, as of the night."""

import dagster as dg

from assets._tables import nightly_table_asset
from memcurator import entries
from memcurator.tables import CHECKS, ENTRIES, ENTRY_USAGE, MEMORY_WRITES, RECALL_RESULTS, RUNS

RAW = [["raw", "events"]]
# The stages that run memcurator/kernels.py's compiled loops, which core.entries loads ahead for them
# (text.load_compiled_ahead): a run without either (core.entries materialised alone) loads none
COMPILED_LOOPS_USED_BY = {dg.AssetKey(["core", "near_duplicate_pairs"]), dg.AssetKey(["core", "contradictions"])}


def _entries_options(context: dg.AssetExecutionContext) -> dict:
    return {"load_ahead": bool(COMPILED_LOOPS_USED_BY & context.job_def.asset_layer.selected_asset_keys)}


core_memory_writes = nightly_table_asset(MEMORY_WRITES, entries.build_memory_writes, RAW, "entries")
core_entries = nightly_table_asset(
    ENTRIES, entries.build_entries, [core_memory_writes], "entries",
    {"namespaces": "select count(distinct namespace) from core.entries",
     "explicitly_superseded": "select count(*) from core.entry_successors"},
    options=_entries_options,
)
core_recall_results = nightly_table_asset(RECALL_RESULTS, entries.build_recall_results, RAW, "entries")
core_checks = nightly_table_asset(CHECKS, entries.build_checks, RAW, "entries")
core_runs = nightly_table_asset(RUNS, entries.build_runs, RAW, "entries")
core_entry_usage = nightly_table_asset(
    ENTRY_USAGE, entries.build_entry_usage, [core_entries, core_recall_results, core_checks], "entries",
    {"entries_never_recalled": "select count(*) from core.entry_usage where recall_count = 0",
     "entries_with_failed_assertions": "select count(*) from core.entry_usage where failed_assertions > 0"},
)
