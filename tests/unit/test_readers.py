"""Readers never block the nightly writer and never see a half-written table."""

from __future__ import annotations

import errno
import fcntl
import os
import random
import subprocess
import sys

import pytest

from memcurator import store
from memcurator.tables import EVENTS

INSERT = "INSERT INTO raw.events VALUES ($id, 'run.start', now()::timestamp, 'ns', null, null, 'agent', null, '{}', 'h', 'f', 1)"

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
    assert published == (home.published, "clone", 0) and calls == [store.FICLONE]
    assert home.published.read_bytes() == home.store.read_bytes()


def test_the_snapshot_is_a_byte_copy_where_the_filesystem_cannot_share_blocks(home, monkeypatch):
    _store_with_an_event(home)

    def unsupported(*args):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # ext4

    monkeypatch.setattr(fcntl, "ioctl", unsupported)
    assert store.publish(home.store, home.published) == (home.published, "copy", home.store.stat().st_size)
    assert home.published.read_bytes() == home.store.read_bytes()
    with store.connect(home.published, read_only=True) as reader:
        assert reader.execute("select count(*) from raw.events").fetchone()[0] == 1


def _no_clone(monkeypatch):
    def unsupported(*args):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # ext4

    monkeypatch.setattr(fcntl, "ioctl", unsupported)


def _add_events(home, count):
    with store.connect(home.store) as writer:
        store.ensure_table(writer, EVENTS)
        start = writer.execute("select count(*) from raw.events").fetchone()[0]
        for i in range(start, start + count):
            writer.execute(INSERT, {"id": f"e{i}"})


def _count(path):
    with store.connect(path, read_only=True) as reader:
        return reader.execute("select count(*) from raw.events").fetchone()[0]


def _pages_differing(a: bytes, b: bytes) -> int:
    """Bytes in the pages of ``a`` that differ from ``b`` (a page past b's end differs)."""
    page = store.PAGE
    return sum(len(a[i:i + page]) for i in range(0, len(a), page) if a[i:i + page] != b[i:i + page])


def test_a_publish_without_clones_writes_over_the_snapshot_before_only_the_pages_that_differ(home, monkeypatch):
    _no_clone(monkeypatch)
    spare = store.spare_path(home.published)
    _add_events(home, 1)
    assert store.publish(home.store, home.published).published_by == "copy"  # nothing before it
    assert not spare.exists()
    _add_events(home, 1)
    assert store.publish(home.store, home.published).published_by == "copy"  # the snapshot it replaced is kept
    assert spare.exists() and _count(spare) == 1
    _add_events(home, 1)
    with store.connect(home.store) as conn:
        conn.execute("CHECKPOINT")
    before = spare.read_bytes()
    published = store.publish(home.store, home.published)
    assert published.published_by == "delta"
    assert home.published.read_bytes() == home.store.read_bytes() and _count(home.published) == 3
    assert published.written == _pages_differing(home.store.read_bytes(), before) < home.store.stat().st_size
    assert _count(spare) == 2  # the night before's snapshot, for the next publish


def test_a_snapshot_a_reader_holds_is_never_written_over(home, monkeypatch):
    _no_clone(monkeypatch)
    _add_events(home, 1)
    store.publish(home.store, home.published)
    with store.connect(home.published, read_only=True) as reader:  # open across the next two publishes
        held = reader.execute("select count(*) from raw.events").fetchone()[0]
        _add_events(home, 1)
        store.publish(home.store, home.published)  # the reader's file is now the spare
        _add_events(home, 1)
        assert store.publish(home.store, home.published).published_by == "copy"  # held: not written over
        assert reader.execute("select count(*) from raw.events").fetchone()[0] == held == 1
    assert _count(home.published) == 3 and _count(store.spare_path(home.published)) == 2


def test_a_purge_publish_keeps_no_earlier_snapshot_or_left_temp_file(home, monkeypatch):
    _no_clone(monkeypatch)
    _add_events(home, 1)
    store.publish(home.store, home.published)
    store.publish(home.store, home.published)
    left = home.published.with_name(f".{home.published.name}.999.tmp")  # a publish killed before its rename
    left.write_bytes(b"old")
    assert store.spare_path(home.published).exists()
    assert store.publish(home.store, home.published, keep_spare=False).published_by == "copy"
    assert sorted(p.name for p in home.published.parent.iterdir()) == [home.published.name]


@pytest.mark.parametrize("target_size", [0, 3 * 4096, 10 * 4096 + 17, 40 * 4096])
def test_writing_the_changed_pages_makes_a_byte_copy(tmp_path, monkeypatch, target_size):
    monkeypatch.setattr(store, "WINDOW", 5 * store.PAGE + 100)  # windows that end inside a page
    rng = random.Random(target_size)
    source = bytearray(rng.randbytes(20 * store.PAGE + 321))
    target = bytearray(source[:target_size]) + bytearray(rng.randbytes(max(0, target_size - len(source))))
    for at in rng.sample(range(min(len(source), len(target)) or 1), min(5, len(target))):
        target[at] ^= 0xFF  # a few bytes differ
    (tmp_path / "s").write_bytes(source)
    (tmp_path / "t").write_bytes(target)
    written = store.write_changed_pages(tmp_path / "s", tmp_path / "t")
    assert (tmp_path / "t").read_bytes() == source
    # what the target lacked, and at most a page around each of the five changed bytes and the last page
    assert written <= max(0, len(source) - target_size) + 6 * store.PAGE


def test_a_publish_removes_the_files_of_publishes_killed_before_their_rename(home, monkeypatch):
    _no_clone(monkeypatch)
    _add_events(home, 1)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder, name = home.published.parent, home.published.name
        folder.mkdir(parents=True, exist_ok=True)
        dead = [folder / f".{name}.{ended.stdout.strip()}.tmp", folder / f".{name}.spare.{ended.stdout.strip()}"]
        live = folder / f".{name}.{running.pid}.tmp"  # a publish still writing
        for path in (*dead, live):
            path.write_bytes(b"a store-sized file")
        store.publish(home.store, home.published)
        assert not any(path.exists() for path in dead) and live.exists()
    finally:
        running.kill()
        running.wait()


def _published_twice(home, monkeypatch) -> bytes:
    """Two nights published without clones (so a spare to write over) and a third night's events in the
    store; returns the published snapshot's bytes."""
    _no_clone(monkeypatch)
    for _ in range(2):
        _add_events(home, 1)
        store.publish(home.store, home.published)
    _add_events(home, 1)
    return home.published.read_bytes()


def test_a_delta_publish_that_fails_midway_leaves_the_snapshot_whole(home, monkeypatch):
    published = _published_twice(home, monkeypatch)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", disk_full)
    with pytest.raises(OSError):
        store.publish(home.store, home.published)
    monkeypatch.undo()
    # readers keep the last whole snapshot; the half-written spare is gone, not renamed into place
    assert home.published.read_bytes() == published and _count(home.published) == 2
    assert sorted(p.name for p in home.published.parent.iterdir()) == [home.published.name]
    _no_clone(monkeypatch)
    assert store.publish(home.store, home.published).published_by == "copy"  # no spare left: the next one copies
    assert _count(home.published) == 3


KILLED_MIDWAY = """
import errno, fcntl, os, signal, sys
from pathlib import Path
from memcurator import store

def unsupported(*args):
    raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # ext4: no clone

real = os.pwrite

def pwrite_then_die(fd, data, offset):  # kill -9 after the first run of pages is written over the spare
    written = real(fd, data, offset)
    os.kill(os.getpid(), signal.SIGKILL)
    return written

fcntl.ioctl, os.pwrite = unsupported, pwrite_then_die
store.publish(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_a_delta_publish_killed_midway_leaves_the_snapshot_whole_and_the_next_publish_cleans_up(home, monkeypatch):
    published = _published_twice(home, monkeypatch)
    killed = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(home.store), str(home.published)])
    assert killed.returncode == -9
    # readers keep the last whole snapshot; the half-written spare is left under the dead publish's name
    assert home.published.read_bytes() == published and _count(home.published) == 2
    left = [p.name for p in home.published.parent.iterdir() if p != home.published]
    assert left and all(name.endswith(".tmp") for name in left), left
    published = store.publish(home.store, home.published)
    assert published.published_by == "copy"  # the spare went with the killed publish
    assert home.published.read_bytes() == home.store.read_bytes() and _count(home.published) == 3
    # the killed publish's file removed (its process is gone); the snapshot replaced is the next spare
    spare = store.spare_path(home.published)
    assert sorted(p.name for p in home.published.parent.iterdir()) == sorted([home.published.name, spare.name])
    assert _count(spare) == 2


def test_with_the_spare_turned_off_published_holds_one_file_and_every_publish_copies(home, monkeypatch):
    spare = store.spare_path(home.published)
    _published_twice(home, monkeypatch)
    assert spare.exists()  # on by default
    monkeypatch.setenv(store.SPARE_ENV, "off")
    assert store.publish(home.store, home.published).published_by == "copy"
    assert sorted(p.name for p in home.published.parent.iterdir()) == [home.published.name]  # the spare went
    _add_events(home, 1)
    assert store.publish(home.store, home.published).published_by == "copy"
    assert not spare.exists() and _count(home.published) == 4
    monkeypatch.setenv(store.SPARE_ENV, "maybe")
    with pytest.raises(ValueError, match=store.SPARE_ENV):  # a clear error, not a silent default
        store.publish(home.store, home.published)
