"""The store connection: DuckDB's memory is bounded by configuration, and a bad value is an error."""

from __future__ import annotations

import pytest

from memcurator import store


def test_memory_limit_defaults_to_3gb_and_follows_the_environment(monkeypatch):
    monkeypatch.delenv(store.MEMORY_LIMIT_ENV, raising=False)
    with store.connect(":memory:") as conn:
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "2.7 GiB"  # 3 GB
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "512MiB")
    with store.connect(":memory:") as conn:
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "512.0 MiB"


def test_a_bad_memory_limit_is_refused(monkeypatch):
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "4GB; drop table x")
    with pytest.raises(ValueError, match="expected a size"):
        store.memory_limit()
