"""Readers never block the nightly writer and never see a half-written table."""

from __future__ import annotations

import errno
import fcntl
import os
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


def _store_with_an_event(home):
    with store.connect(home.store) as writer:
        store.ensure_table(writer, EVENTS)
        writer.execute("INSERT INTO raw.events VALUES ('e', 'run.start', now()::timestamp, 'ns', null, null, 'agent', null, '{}', 'h', 'f', 1)")


def test_the_snapshot_is_a_clone_of_the_store_where_the_filesystem_shares_blocks(home, monkeypatch):
    # (XFS or btrfs: the kernel's clone, stood in for here by a copy through the two descriptors)
    _store_with_an_event(home)
    calls = []

    def clone(target_fd, request, source_fd):
        calls.append(request)
        os.lseek(source_fd, 0, os.SEEK_SET)
        while chunk := os.read(source_fd, 1 << 20):
            os.write(target_fd, chunk)
        return 0

    monkeypatch.setattr(fcntl, "ioctl", clone)
    published = store.publish(home.store, home.published)
    assert published == (home.published, "clone") and calls == [store.FICLONE]
    assert home.published.read_bytes() == home.store.read_bytes()


def test_the_snapshot_is_a_byte_copy_where_the_filesystem_cannot_share_blocks(home, monkeypatch):
    _store_with_an_event(home)

    def unsupported(*args):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # ext4

    monkeypatch.setattr(fcntl, "ioctl", unsupported)
    assert store.publish(home.store, home.published) == (home.published, "copy")
    assert home.published.read_bytes() == home.store.read_bytes()
    with store.connect(home.published, read_only=True) as reader:
        assert reader.execute("select count(*) from raw.events").fetchone()[0] == 1
