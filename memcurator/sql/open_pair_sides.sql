-- (included by recall_view.sql and contested_entries.sql) The two sides of the open conflicts of the CTE
-- open_pairs, with their hashes, and their states, read by those hashes (with the filter true of every hash,
-- store.EVERY_HASH: DuckDB skips the other rows in the scan; joined by key, every entry's state was read) and
-- matched by key where read.
sides as materialized (
    select namespace, entry_a as entry_id, entry_hash_of(namespace, entry_a) as entry_hash from open_pairs
    union
    select namespace, entry_b, entry_hash_of(namespace, entry_b) from open_pairs
),

side_states as materialized (
    select namespace, entry_id, state from core.entry_lifecycle
    semi join (select entry_hash from sides where entry_hash % 1000003 <> 99999999) using (entry_hash)
),
