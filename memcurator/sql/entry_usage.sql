-- One row per entry in core.entries: how it was recalled and checked before $as_of. With $all false,
-- only the entries in the temp table stage_scope (changes.refresh_entries), read by their hashes
-- (stage_hashes: a few more entries may come, which it leaves out).
with scoped_entries as not materialized (
    select namespace, entry_id from core.entries where $all
    union all
    select namespace, entry_id from core.entries semi join stage_hashes using (entry_hash) where not $all
),

scoped_recalls as not materialized (
    -- scoped core.recall_results
),

scoped_checks as not materialized (
    -- scoped core.checks
),

recalled as (
    select
        namespace,
        entry_id,
        count(*) as recall_count,
        max(ts) as last_recalled_at,
        count(*) filter (where injected) as injected_count,
        max(ts) filter (where injected) as last_injected_at,
        count(distinct run_id) as distinct_recall_runs
    from scoped_recalls
    group by namespace, entry_id
),

checked as (
    select
        namespace,
        entry_id,
        count(*) filter (where status = 'pass') as proven_count,
        count(*) filter (where status = 'fail' and error_class = 'assertion') as failed_assertions,
        count(*) filter (where status = 'fail' and error_class = 'transient') as transient_failures,
        max(ts) filter (where status = 'pass') as last_verified_at,
        max(ts) filter (where status = 'fail' and error_class = 'assertion') as last_failed_assertion_at,
        arg_max(status, (ts, event_id)) filter (where error_class is distinct from 'transient') as last_check_status
    from scoped_checks
    group by namespace, entry_id
)

select
    e.namespace,
    e.entry_id,
    coalesce(r.recall_count, 0) as recall_count,
    r.last_recalled_at,
    coalesce(r.injected_count, 0) as injected_count,
    r.last_injected_at,
    coalesce(r.distinct_recall_runs, 0) as distinct_recall_runs,
    coalesce(c.proven_count, 0) as proven_count,
    coalesce(c.failed_assertions, 0) as failed_assertions,
    coalesce(c.transient_failures, 0) as transient_failures,
    c.last_verified_at,
    c.last_failed_assertion_at,
    c.last_check_status
from scoped_entries as e
left join recalled as r using (namespace, entry_id)
left join checked as c using (namespace, entry_id)
