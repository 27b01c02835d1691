-- Declared conflicts from supersede links, detected pairs from the judge, curator resolutions, and
-- which side is likely current (later validity, then later write, higher trust, passing checks).
-- Inputs: scope_links and detected_pairs (temp tables: the links and the judge's detected pairs of the
-- pairs derived, all of them or those with an entry in the scope of changes.refresh_pairs;
-- contradictions.build_contradictions), core.entries, core.entry_usage, raw.curator_decisions.
with declared as (
    select
        namespace,
        entry_id as entry_a,
        successor_id as entry_b,
        case status
            when 'accepted' then case source when 'failed_check' then 'failed_check' when 'curator' then 'curator' else 'explicit' end
            when 'trust_guarded' then 'trust_guarded'
            when 'cycle_rejected' then 'cycle'
        end as kind,
        null as detector,
        detail as evidence,
        1.0 as confidence,
        status = 'accepted' as settled
    from scope_links
    where status <> 'dangling'
    qualify row_number() over (partition by namespace, entry_id, successor_id order by linked_at desc, event_id desc) = 1
),

found as (
    select namespace, entry_a, entry_b, 'detected' as kind, detector, evidence, confidence, false as settled
    from detected_pairs
),

pairs as (
    select * from declared
    union all
    select * from found
),

keyed as (
    select *, 'k_' || left(sha256(namespace || chr(31) || least(entry_a, entry_b) || chr(31) || greatest(entry_a, entry_b)), 16) as conflict_id
    from pairs
),

decision as (
    select
        namespace,
        target_id as conflict_id,
        arg_max(action, (ts, decision_id)) as action,
        arg_max(reason, (ts, decision_id)) as reason
    from raw.curator_decisions
    where target_kind = 'conflict' and ts < $as_of
    group by namespace, target_id
),

paired as materialized (
    select namespace, entry_id, entry_hash_of(namespace, entry_id) as entry_hash
    from (select namespace, entry_a as entry_id from keyed union select namespace, entry_b from keyed)
),

entries_read as materialized (
    select namespace, entry_id, valid_from, last_written_at, trust from core.entries
    semi join (select entry_hash from paired where every_hash(entry_hash)) using (entry_hash)
),

usage_read as materialized (
    select namespace, entry_id, last_check_status from core.entry_usage
    semi join (select entry_hash from paired where every_hash(entry_hash)) using (entry_hash)
),

sided as (
    -- the entries of the pairs, with their usage, each found by the pairs' hashes (with every_hash, the filter
    -- true of every hash: DuckDB skips the other rows in the scan) and matched by key after
    -- (joined whole, the entries and their usage were hashed for the few pairs: 0.12-0.16 s at 1M entries,
    -- with none; by key, every row's strings were read: 59 ms of scan in a 1 %-churn night at 1M)
    select e.namespace, e.entry_id, e.valid_from, e.last_written_at, e.trust, u.last_check_status
    from (select * from entries_read semi join paired using (namespace, entry_id)) as e
    left join (select * from usage_read semi join paired using (namespace, entry_id)) as u
        using (namespace, entry_id)
),

sides as (
    select
        k.*,
        a.valid_from as a_from, b.valid_from as b_from,
        a.last_written_at as a_written, b.last_written_at as b_written,
        a.trust as a_trust, b.trust as b_trust,
        coalesce(a.last_check_status = 'pass', false)::int - coalesce(a.last_check_status = 'fail', false)::int as a_checks,
        coalesce(b.last_check_status = 'pass', false)::int - coalesce(b.last_check_status = 'fail', false)::int as b_checks
    from keyed as k
    inner join sided as a on a.namespace = k.namespace and a.entry_id = k.entry_a
    inner join sided as b on b.namespace = k.namespace and b.entry_id = k.entry_b
)

select
    s.namespace,
    s.conflict_id,
    s.entry_a,
    s.entry_b,
    s.kind,
    s.detector,
    s.evidence,
    s.confidence,
    case
        when d.action is not null then d.action
        when s.settled then 'resolved_by_link'
        else 'open'
    end as status,
    case
        -- a settled link names the current side; otherwise: later validity, later write, trust, checks
        when s.settled then s.entry_b
        when coalesce(s.b_from, s.b_written) > coalesce(s.a_from, s.a_written) then s.entry_b
        when coalesce(s.b_from, s.b_written) < coalesce(s.a_from, s.a_written) then s.entry_a
        when s.b_trust <> s.a_trust then case when s.b_trust > s.a_trust then s.entry_b else s.entry_a end
        when s.b_checks <> s.a_checks then case when s.b_checks > s.a_checks then s.entry_b else s.entry_a end
        else s.entry_b
    end as likely_current,
    d.reason as resolution_reason
from sides as s
left join decision as d on d.namespace = s.namespace and d.conflict_id = s.conflict_id
