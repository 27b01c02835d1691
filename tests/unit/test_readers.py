"""Readers never block the nightly writer and never see a half-written table."""

from __future__ import annotations

import subprocess
import sys

from memcurator import store
from memcurator.tables import EVENTS

READ = """
import duckdb, sys
c = duckdb.connect(sys.argv[1], read_only=True)
print(c.execute("select count(*) from raw.events").fetchone()[0])
"""


def test_a_reader_in_another_process_reads_the_snapshot_while_the_writer_holds_the_store(home):
    with store.connect(home.store) as writer:
        store.ensure_table(writer, EVENTS)
    store.publish(home.store, home.published)
    with store.connect(home.store) as writer:  # the nightly job holds the write lock
        writer.execute("BEGIN TRANSACTION")
        writer.execute("INSERT INTO raw.events VALUES ('e', 'run.start', now()::timestamp, 'ns', null, null, 'agent', null, '{}', 'h', 'f', 1)")
        out = subprocess.run([sys.executable, "-c", READ, str(home.published)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "0"  # the snapshot, not the uncommitted write
        writer.execute("COMMIT")


def test_publishing_replaces_the_snapshot_atomically_under_an_open_reader(home):
    with store.connect(home.store) as writer:
        store.ensure_table(writer, EVENTS)
    store.publish(home.store, home.published)
    with store.connect(home.published, read_only=True) as reader:
        with store.connect(home.store) as writer:
            writer.execute("INSERT INTO raw.events VALUES ('e', 'run.start', now()::timestamp, 'ns', null, null, 'agent', null, '{}', 'h', 'f', 1)")
        store.publish(home.store, home.published)  # rename over the file the reader has open
        assert reader.execute("select count(*) from raw.events").fetchone()[0] == 0  # its consistent old view
    with store.connect(home.published, read_only=True) as fresh:
        assert fresh.execute("select count(*) from raw.events").fetchone()[0] == 1
