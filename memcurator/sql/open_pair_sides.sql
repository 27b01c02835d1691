-- (included by recall_view.sql and contested_entries.sql) The two sides of the open conflicts of the CTE
-- open_pairs, with their hashes, and their states, read by those hashes (with every_hash, the filter true
-- of every hash: DuckDB skips the other rows in the scan; joined by key, every entry's state was read).
-- A state is matched by key where it is joined to its pair (another entry of the same hash may be read
-- with it, and stays unmatched).
sides as materialized (
    select namespace, entry_a as entry_id, entry_hash_of(namespace, entry_a) as entry_hash from open_pairs
    union
    select namespace, entry_b, entry_hash_of(namespace, entry_b) from open_pairs
),

side_states as materialized (
    select namespace, entry_id, state from core.entry_lifecycle
    semi join (select entry_hash from sides where every_hash(entry_hash)) using (entry_hash)
),
