"""Load the .sql files that sit next to the modules that run them."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources


# What a line "-- scoped <table>" stands for: the rows of a per-entry table a stage reads, every row when $all
# is true and otherwise those of the entries in its scope, found by their hashes (changes.refresh_entries
# makes the view stage_hashes; a few entries outside the scope may come, which it leaves out).
SCOPED_ROWS = """\
{indent}select * from {table} where $all
{indent}union all
{indent}select * from {table} semi join stage_hashes using (entry_hash) where not $all"""
# What a line "-- scoped keyed <table>" stands for: the same rows without their strings, each with its entry_key
# (the temp macro changes.ENTRY_KEY_MACRO: the hash alone where the scope's hashes are a key of core.entries, the
# strings otherwise). The query joins such reads on entry_key and takes the strings from core.entries' rows: the
# other reads then take no string, and their joins hash none. <table> holds rows of entries of core.entries only
# (changes.KEYED_BY_ENTRIES).
SCOPED_KEYED_ROWS = """\
{indent}select * exclude (namespace, entry_id), entry_key(namespace, entry_id, entry_hash) as entry_key
{indent}from {table} where $all
{indent}union all
{indent}select * exclude (namespace, entry_id), entry_key(namespace, entry_id, entry_hash) as entry_key
{indent}from {table} semi join stage_hashes using (entry_hash) where not $all"""
# What a line "-- scoped <table> by <column>" stands for: the rows of a table whose <column> names an entry of
# its namespace (a pair's older side, a superseded entry), every row when $all is true and otherwise those
# naming an entry in the temp table stage_scope (matched by the strings: such a table keeps no hash of it).
SCOPED_BY = """\
{indent}select * from {table} where $all
{indent}union all
{indent}select t.* from {table} as t
{indent}semi join stage_scope as s on s.namespace = t.namespace and s.entry_id = t.{column}
{indent}where not $all"""
# The row ids of a table of pairs (namespace and two entry columns) with either entry in a scope table: a semi
# join for each side, then their union. A line "-- scoped pairs <table>" stands for the rows of that table in a
# stage's scope found so (every row when $all is true); changes.pairs_of_scope reads the same rows.
PAIR_ROW_IDS = """\
select p.rowid from {table} as p
semi join {scope} as s on s.namespace = p.namespace and s.entry_id = p.{first}
union
select p.rowid from {table} as p
semi join {scope} as s on s.namespace = p.namespace and s.entry_id = p.{second}"""
SCOPED_PAIRS = """\
{indent}select * from {table} where $all
{indent}union all
{indent}select * from {table} where not $all and rowid in (
{rows})"""


PAIR = ("entry_a", "entry_b")  # a table of pairs' entry columns, unless it names others


def pair_row_ids(table: str, pair: tuple[str, str] = PAIR, scope: str = "stage_scope") -> str:
    """PAIR_ROW_IDS of ``table``, whose entry columns are ``pair``, against the temp table ``scope``."""
    return PAIR_ROW_IDS.format(table=table, scope=scope, first=pair[0], second=pair[1])


def _scoped_pairs(indent: str, table: str) -> str:
    rows = "\n".join(f"{indent}    {line}" for line in pair_row_ids(table).splitlines())
    return SCOPED_PAIRS.format(indent=indent, table=table, rows=rows)


@cache
def load(name: str) -> str:
    """The query in sql/<name>.sql; a line "-- include <other>" stands for the query in sql/<other>.sql, and a
    line "-- scoped <table>" for the rows of ``table`` in a stage's scope (SCOPED_ROWS), a line "-- scoped keyed
    <table>" for them keyed by entry_key (SCOPED_KEYED_ROWS), a line "-- scoped pairs <table>" for those of a
    table of pairs (SCOPED_PAIRS), and a line "-- scoped <table> by <column>" for the rows whose column names an
    entry of the scope (SCOPED_BY)."""
    text = resources.files("memcurator").joinpath("sql", f"{name}.sql").read_text()
    text = re.sub(r"^( *)-- scoped pairs ([\w.]+)$", lambda m: _scoped_pairs(m.group(1), m.group(2)), text, flags=re.M)
    text = re.sub(r"^( *)-- scoped ([\w.]+) by (\w+)$",
                  lambda m: SCOPED_BY.format(indent=m.group(1), table=m.group(2), column=m.group(3)), text, flags=re.M)
    text = re.sub(r"^( *)-- scoped keyed ([\w.]+)$",
                  lambda m: SCOPED_KEYED_ROWS.format(indent=m.group(1), table=m.group(2)), text, flags=re.M)
    text = re.sub(r"^( *)-- scoped ([\w.]+)$", lambda m: SCOPED_ROWS.format(indent=m.group(1), table=m.group(2)),
                  text, flags=re.M)
    return re.sub(r"^-- include (\w+)$", lambda m: load(m.group(1)), text, flags=re.M)
