"""Load the .sql files that sit next to the modules that run them."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    return resources.files("memcurator").joinpath("sql", f"{name}.sql").read_text()
