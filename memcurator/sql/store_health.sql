-- One row per namespace for the night ending at $as_of: size, states, flow, rates, injected ages.
with states as (
    select namespace,
        count(*) as entries,
        count(*) filter (where state in ('active', 'reverify')) as active,
        count(*) filter (where state = 'archived') as archived,
        count(*) filter (where state = 'superseded') as superseded,
        count(*) filter (where state = 'expired') as expired,
        count(*) filter (where state in ('merged', 'redundant')) as compressed,
        count(*) filter (where state in ('held', 'case')) as session_material,
        count(*) filter (where state not in ('active', 'reverify', 'held', 'case')
                         and since >= $as_of::timestamp - interval 1 day and since < $as_of) as retired_tonight,
        count(*) filter (where importance < $noise_floor) as under_noise_floor
    from core.entry_lifecycle
    group by namespace
),

writes as (
    select namespace, count(*) as writes_in
    from core.memory_writes
    where ts >= $as_of::timestamp - interval 1 day and ts < $as_of
    group by namespace
),

contested as (
    select namespace, count(*) as contested from core.contested_entries group by namespace
),

links as (
    -- of the conflicting pairs found, how many carry an explicit supersede link
    select namespace,
        count(*) filter (where kind in ('explicit', 'failed_check')) as linked,
        count(*) as conflicting
    from core.contradictions
    group by namespace
),

injections as (
    -- entries injected into prompts over the last 30 days: how old were they when injected
    select r.namespace, r.entry_id, r.ts, (epoch(r.ts) - epoch(e.first_written_at)) / 86400.0 as age_days
    from core.recall_results as r
    inner join core.entries as e using (namespace, entry_id)
    where r.injected and r.ts >= $as_of::timestamp - interval 30 day
),

old_unverified as (
    -- the injections of entries older than 90 days not verified in the 90 days before: only those
    -- injections are joined with the entries' usage (every one was: 0.16 s of CPU a night at 1M entries)
    select i.namespace, count(*) as injected_old_unverified
    from injections as i
    left join core.entry_usage as u using (namespace, entry_id)
    where i.age_days > 90 and (u.last_verified_at is null or u.last_verified_at < i.ts - interval 90 day)
    group by i.namespace
),

injected as (
    select namespace,
        median(age_days) as injected_age_median_days,
        quantile_cont(age_days, 0.9) as injected_age_p90_days,
        count(*) as injections
    from injections
    group by namespace
),

redactions as (
    -- events whose credentials were redacted at ingest, so far (the events of raw.events whose payload
    -- carries the mark, kept by health_history.keep_redacted_events)
    select namespace, count(*) as secrets_redacted
    from work.redacted_events
    where ts < $as_of
    group by namespace
),

redundancy as (
    -- active entries beyond the first of each cluster (an entry outside clusters counts once either way,
    -- so only the clustered ones are read): the clustered entries but those whose state is outside the
    -- active set (every entry has a lifecycle row; joined with the active rows of the ranking instead,
    -- DuckDB hashed the million of them at 1M entries, 0.17 s)
    select c.namespace, count(*) - count(distinct c.cluster_id) as redundant
    from core.near_duplicate_clusters as c
    anti join (select namespace, entry_id from core.entry_lifecycle where state not in ('active', 'reverify'))
        using (namespace, entry_id)
    group by c.namespace
)

select
    ($as_of::timestamp - interval 1 day)::date as night,
    s.namespace,
    s.entries, s.active, s.archived, s.superseded, s.expired, s.compressed, s.session_material,
    coalesce(c.contested, 0) as contested,
    coalesce(w.writes_in, 0) as writes_in,
    s.retired_tonight,
    coalesce(rd.redundant, 0)::double / greatest(s.active, 1) as duplicate_rate,
    coalesce(c.contested, 0)::double / greatest(s.active, 1) as contested_rate,
    s.under_noise_floor::double / greatest(s.entries, 1) as under_noise_floor_share,
    l.linked::double / nullif(l.conflicting, 0) as explicit_link_ratio,
    i.injections,
    i.injected_age_median_days,
    i.injected_age_p90_days,
    coalesce(o.injected_old_unverified, 0)::double / i.injections as injected_old_unverified_share,
    coalesce(sr.secrets_redacted, 0) as secrets_redacted,
    $as_of as as_of
from states as s
left join writes as w using (namespace)
left join contested as c using (namespace)
left join links as l using (namespace)
left join injected as i using (namespace)
left join old_unverified as o using (namespace)
left join redundancy as rd using (namespace)
left join redactions as sr using (namespace)
order by s.namespace
