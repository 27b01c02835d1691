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


@cache
def load(name: str) -> str:
    """The query in sql/<name>.sql; a line "-- include <other>" stands for the query in sql/<other>.sql, and a
    line "-- scoped <table>" for the rows of ``table`` in a stage's scope (SCOPED_ROWS)."""
    text = resources.files("memcurator").joinpath("sql", f"{name}.sql").read_text()
    text = re.sub(r"^( *)-- scoped ([\w.]+)$", lambda m: SCOPED_ROWS.format(indent=m.group(1), table=m.group(2)),
                  text, flags=re.M)
    return re.sub(r"^-- include (\w+)$", lambda m: load(m.group(1)), text, flags=re.M)
