"""Nightly partitions: one per day; the night of day D sees every event before D+1 00:00 UTC."""

import dagster as dg

from memcurator.entries import FIRST_NIGHT

nightly_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_NIGHT.isoformat(), timezone="UTC")
