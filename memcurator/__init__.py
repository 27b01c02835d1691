"""memcurator: offline curation of AI-agent memory stores.

The package is Dagster-free: every force (ingest, entries, lifecycle, ranking, clustering,
contradictions, recall, health) is a module of pure functions over DuckDB connections and
polars frames. The Dagster assets in ``assets/`` are thin wrappers around it.
"""

__version__ = "0.1.0"
