-- Scope of an incremental refresh (changes.refresh_entries: the temp table input_changes holds the entries
-- the inputs changed; the parameter since is the night last derived). Rows added to that scope:
-- Entries and principles whose recency boost a day count may have moved since the night last derived
-- ($since): the last recall crossed recent_boost_days or warm_boost_days ago (a minute either side, for
-- the rounding of the day count).
with recalled as (
    select namespace, entry_id, last_recalled_at from core.entry_usage where last_recalled_at is not null
    union all
    select namespace, principle_id, last_recalled_at from core.principle_proposals
    where status = 'approved' and last_recalled_at is not null
)
select namespace, entry_id from recalled
where last_recalled_at + to_days($recent_boost_days)
          between $since::timestamp - interval 1 minute and $as_of::timestamp + interval 1 minute
   or last_recalled_at + to_days($warm_boost_days)
          between $since::timestamp - interval 1 minute and $as_of::timestamp + interval 1 minute
