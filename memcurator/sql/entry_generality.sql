-- One row per entry: effective generality 0-3 (declared, or derived by the rule in docs/curation.md).
-- With $all false, only the entries in the temp table stage_scope (changes.refresh_entries), read by their
-- hashes (stage_hashes: a few more entries may come, which it leaves out); but for core.entries without
-- their strings, joined on entry_key (changes.define_entry_key).
with scoped_entries as not materialized (
    -- scoped core.entries
),

scoped_usage as not materialized (
    -- scoped keyed core.entry_usage
),

scoped_text_features as not materialized (
    -- scoped keyed core.entry_text_features
),

features as (
    select e.namespace, e.entry_id, e.class, e.generality, e.distinct_runs, u.distinct_recall_runs,
        t.is_imperative, t.specifics
    from scoped_entries as e
    inner join scoped_usage as u on u.entry_key = entry_key(e.namespace, e.entry_id, e.entry_hash)
    inner join scoped_text_features as t on t.entry_key = u.entry_key
)

select
    namespace,
    entry_id,
    coalesce(generality, greatest(0.0, least(3.0,
        case class
            when 'principle' then 2.0 when 'identity' then 1.5 when 'preference' then 1.5
            when 'lesson' then 1.0 when 'config' then 1.0 when 'relationship' then 1.0
            when 'operational' then 0.3 else 0.2
        end
        + case when is_imperative then 0.5 else 0.0 end
        - 0.3 * specifics
        + least(1.0, 0.25 * log2(1 + greatest(distinct_runs - 1, 0) + distinct_recall_runs))
    ))) as generality,
    case when generality is not null then 'declared' else 'derived' end as generality_rule,
    is_imperative,
    specifics
from features
