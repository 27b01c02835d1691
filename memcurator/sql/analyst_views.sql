-- Stable views for analysts (schema `analyst`), recreated before each publish.
create or replace view analyst.entries as
select
    e.namespace, e.entry_id, e.text, e.class, e.importance, e.trust, e.generality, e.tags,
    e.valid_from, e.valid_until, s.superseded_by, s.superseded_reason,
    e.first_written_at, e.last_written_at, e.version_count, e.distinct_runs, e.distinct_agents,
    u.recall_count, u.last_recalled_at, u.injected_count, u.proven_count, u.failed_assertions,
    u.transient_failures, u.last_verified_at
from core.entries as e
left join core.entry_successors as s using (namespace, entry_id)
left join core.entry_usage as u using (namespace, entry_id);

create or replace view analyst.quarantine as
select source_file, line_no, reason, detail, raw_bytes, raw_text from raw.quarantine;

create or replace view analyst.quarantine_by_reason as
select reason, count(*) as lines, count(distinct source_file) as files
from raw.quarantine group by reason order by lines desc;

create or replace view analyst.landed_files as
select * from raw.landed_files;

create or replace view analyst.recall_view as
select * from mart.recall_view;

-- (without the hashes the nights keep to find what changed: bookkeeping, not data)
create or replace view analyst.entry_lifecycle as
select l.* exclude (entry_hash, row_hash), e.text
from core.entry_lifecycle as l join core.entries as e using (namespace, entry_id);

create or replace view analyst.audit_log as
select * from core.curation_audit_log;

create or replace view analyst.supersede_links as
select * from core.supersede_links;

create or replace view analyst.principle_proposals as
select * from core.principle_proposals;

create or replace view analyst.conflicts as
select k.*, a.text as text_a, b.text as text_b
from core.contradictions as k
join core.entries as a on a.namespace = k.namespace and a.entry_id = k.entry_a
join core.entries as b on b.namespace = k.namespace and b.entry_id = k.entry_b;

create or replace view analyst.contested_entries as
select c.*, e.text from core.contested_entries as c inner join core.entries as e using (namespace, entry_id);

create or replace view analyst.near_duplicate_clusters as
select c.* exclude (entry_hash), e.text
from core.near_duplicate_clusters as c join core.entries as e using (namespace, entry_id);

create or replace view analyst.store_health as
select * from mart.store_health;
