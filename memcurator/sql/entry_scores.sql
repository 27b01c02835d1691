-- The query of the view core.entry_scores: score = generality x w_generality + min(proven, proven_cap)
-- + recency boost. Recency is of use (last recall), never of the note: age belongs to the note, truth to
-- the fact. The parts are core.entry_score_parts' rows; the night and the weights the row of
-- core.score_settings, so the boost a day count moves is applied when the view is read, and no stored row
-- changes for the date alone.
with timed as (
    select p.*, s.w_generality,
        (epoch(s.as_of) - epoch(p.last_recalled_at)) / 86400.0 as days_since_recall,
        case
            when days_since_recall <= s.recent_boost_days then s.recent_boost
            when days_since_recall <= s.warm_boost_days then s.warm_boost
            else 0.0
        end as recency_boost
    from core.entry_score_parts as p, core.score_settings as s
)

select
    namespace,
    entry_id,
    generality,
    proven_count,
    proven_points,
    recency_boost,
    generality * w_generality + proven_points + recency_boost as score,
    entry_hash
from timed
