-- One row per recallable entry per namespace, ranked, with its banners.
-- Tier `active`: the active set (active, reverify). Tier `session`: held and case material, readable
-- and searchable below the active tier. Superseded, expired and archived entries never appear.
with recallable as (
    select l.*, s.score, s.recency_boost
    from core.entry_lifecycle as l
    inner join core.entry_scores as s using (namespace, entry_id)
    where l.state in ('active', 'reverify', 'held', 'case')
),

banners as (
    select
        r.*,
        e.text, e.tags, e.first_written_at, e.last_written_at, e.version_count, e.writer_agents,
        e.valid_from, e.valid_until,
        u.proven_count, u.last_recalled_at, u.failed_assertions,
        coalesce(u.last_check_status = 'fail', false) as has_failed_check,
        list_filter([
            case when u.last_check_status = 'fail'
                then 'WARNING: failed check (assertion) at ' || strftime(u.last_failed_assertion_at, '%Y-%m-%d') end,
            case when r.state = 'reverify' then 're-verify: ' || r.reason end,
            case when r.flagged_for_review then 'review: ' || r.review_reason end,
            case when r.state in ('held', 'case') then 'session material: ' || r.reason end
        ], b -> b is not null) as banners
    from recallable as r
    inner join core.entries as e using (namespace, entry_id)
    inner join core.entry_usage as u using (namespace, entry_id)
)

select
    namespace,
    entry_id,
    case when state in ('active', 'reverify') then 'active' else 'session' end as tier,
    row_number() over (
        partition by namespace
        order by case when state in ('active', 'reverify') then 0 else 1 end, score desc, last_written_at desc, entry_id
    ) as rank,
    score,
    text,
    class,
    state,
    banners,
    has_failed_check,
    tags,
    generality,
    proven_count,
    last_recalled_at,
    valid_from,
    valid_until,
    first_written_at,
    last_written_at,
    version_count,
    writer_agents,
    as_of
from banners
order by namespace, rank
