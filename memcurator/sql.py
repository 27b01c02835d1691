"""Load the .sql files that sit next to the modules that run them."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """The query in sql/<name>.sql; a line "-- include <other>" stands for the query in sql/<other>.sql."""
    text = resources.files("memcurator").joinpath("sql", f"{name}.sql").read_text()
    return re.sub(r"^-- include (\w+)$", lambda m: load(m.group(1)), text, flags=re.M)
