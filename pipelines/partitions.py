"""Nightly partitions: one per day; the night of day D sees every event before D+1 00:00 UTC."""

import dagster as dg

NIGHTLY_START = "2024-01-01"

nightly_partitions = dg.DailyPartitionsDefinition(start_date=NIGHTLY_START, timezone="UTC")
