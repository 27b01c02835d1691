"""The reproducibility check as a job: the store's last night derived again from its log alone and
compared with the store, table by table (memcurator/rederive.py; `memcurator rederive-check` on the
command line). It only reads the store, so it runs beside no night: weekly, away from the nightly run."""

import dagster as dg

from memcurator.home import STORE_TAG
from memcurator.rederive import StoreChanged, rederive_check
from pipelines.resources import CurationResource, StoreResource


@dg.op(description="Derive the store's last night again from its events and curator decisions alone, with the "
                   "settings that night recorded, and compare every core and mart table with the store's; fails on "
                   "any difference, naming the tables and their rows only one side has.")
def rederive_and_compare(context: dg.OpExecutionContext, store: StoreResource, curation: CurationResource) -> None:
    try:
        # the home's settings give back a chat judge's endpoint where the record masked it
        report = rederive_check(store.paths.store, known=curation.config())
    except (ValueError, StoreChanged) as error:
        raise dg.Failure(description=str(error)) from error
    if not report.identical:
        rows = "\n".join(f"| {t.table} | {t.stored_rows} | {t.rederived_rows} | {t.only_stored} | {t.only_rederived} |"
                         for t in report.tables if not t.identical)
        raise dg.Failure(description=report.verdict(), metadata={"differing": dg.MetadataValue.md(
            "| table | stored rows | re-derived rows | only stored | only re-derived |\n|---|---|---|---|---|\n" + rows)})
    context.log.info(report.verdict())
    context.add_output_metadata({"as_of": report.as_of.isoformat(), "events": report.events,
                                 "tables compared": len(report.tables), "identical": True,
                                 "chat judge verdicts taken as given": report.reused_verdicts})


@dg.job(description="The incremental nights' tables against the full derivation of the last night, from the "
                    "log alone: every table must be identical (reads the store, writes a scratch copy beside it).",
        executor_def=dg.in_process_executor, tags=dict([STORE_TAG]))
def reproducibility_check():
    rederive_and_compare()


# Weekly, Sunday 12:00 UTC: ten hours from the 02:00 nightly run (the check reads the store a night
# writes, and costs a full derivation: about two minutes at 1M entries). On by default, so an
# incremental night that drifts from the full derivation is found within a week.
reproducibility_check_schedule = dg.ScheduleDefinition(
    name="reproducibility_check_weekly",
    job=reproducibility_check,
    cron_schedule="0 12 * * 0",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
