"""The nightly job: the whole graph for one night, in one process (DuckDB has one writer)."""

import dagster as dg

from memcurator.home import STORE_TAG
from pipelines.partitions import nightly_partitions

nightly_curation = dg.define_asset_job(
    name="nightly_curation",
    selection=dg.AssetSelection.all(),
    partitions_def=nightly_partitions,
    executor_def=dg.in_process_executor,
    tags=dict([STORE_TAG]),  # one such run at a time (memcurator.home.DAGSTER_SETTINGS)
    description="Ingest new transcripts, then derive every curated table as of the night, then publish.",
)
