"""Credentials are redacted at ingest: no table, no recall result and no quarantine row holds one."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from memcurator import ingest, store
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from memcurator.purge import purge
from memcurator.recall import recall
from tests.conftest import write, write_jsonl

# realistic shapes (not live credentials)
SECRETS = {
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "openai_key": "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "google_api_key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer_token": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789",
    "password_in_url": "postgres://admin:hunter2secret@db.internal:5432/app",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----",
}
LEAKS = ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "a1B2c3D4e5F6", "xoxb-1234", "Ab12Cd34Ef56", "AIzaSyA-12",
         "dozjgNryP4J3", "abcdefghijklmnopqrstuvwxyz0123456789", "hunter2secret", "MIIEowIBAAKCAQEA7bq"]


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_credential_shape_is_redacted(conn, home, kind):
    write_jsonl(home.landing / "f.jsonl", [write(f"to reach the ledger use {SECRETS[kind]} carefully", entry_id="e")])
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    data = conn.execute("select data from raw.events").fetchone()[0]
    assert f"[REDACTED:{'password' if kind == 'password_in_url' else kind}]" in data
    assert not any(leak in data for leak in LEAKS)


def test_no_table_quarantine_or_recall_result_holds_a_secret(conn, home):
    lines = [write(f"note {i}: the ledger credential is {s}", entry_id=f"e{i}", ts="2026-11-20T00:00:00Z")
             for i, s in enumerate(SECRETS.values())]
    lines.append('{"id": "bad", "type": "memory.write", "token": "ghp_' + "Z" * 36 + '"')  # truncated: quarantined
    write_jsonl(home.landing / "f.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, home.lake, CurationConfig())
    derive_night(conn, datetime(2026, 11, 30))
    tables = [r[0] for r in conn.execute(
        "select table_schema || '.' || table_name from information_schema.tables where table_type = 'BASE TABLE'").fetchall()]
    for table in tables:
        dump = str(conn.execute(f"select * from {table}").fetchall())
        assert not any(leak in dump for leak in LEAKS + ["Z" * 36]), table
    assert conn.execute("select sum(secrets_redacted) from mart.store_health").fetchone()[0] == len(SECRETS)
    conn.execute("CHECKPOINT")
    conn.close()
    for hit in recall("ledger credential", "ns-a", home.store, k=20):
        assert not any(leak in hit.text for leak in LEAKS)


def _redacted_so_far(home, night: datetime) -> tuple[int, int]:
    """After the night: the store health's count, and the count read from every payload of the log."""
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, home.lake, CurationConfig())
        derive_night(conn, night)
        kept = conn.execute("select sum(secrets_redacted) from mart.store_health where as_of = ?", [night]).fetchone()[0]
        read = conn.execute("select count(*) from raw.events where ts < ? and contains(data, '[REDACTED:')",
                            [night]).fetchone()[0]
    return kept, read


def test_the_redaction_count_follows_new_files_and_purges(home):
    """The count reads only the payloads of files it has not read (work.redacted_events): a new file
    adds to it, a purge takes its events out of it (some of a file's, or all), an event after the night
    waits for its night."""
    secrets = list(SECRETS.values())
    write_jsonl(home.landing / "a.jsonl", [
        write(f"note {i}: the ledger credential is {s}", entry_id=f"a{i}", ts="2026-11-20T00:00:00Z",
              user_id="bob" if i < 2 else "ann") for i, s in enumerate(secrets[:5])] + [write("a plain lesson")])
    first, second = datetime(2026, 11, 30), datetime(2026, 12, 5)
    assert _redacted_so_far(home, first) == (5, 5)
    write_jsonl(home.landing / "b.jsonl", [
        write(f"later {i}: the ledger credential is {s}", entry_id=f"b{i}", user_id="cy",
              ts="2026-12-01T00:00:00Z" if i == 2 else "2026-11-25T00:00:00Z") for i, s in enumerate(secrets[5:8])])
    assert _redacted_so_far(home, first) == (7, 7)
    purge(home, "user_id", "bob", "asked to be forgotten")
    assert _redacted_so_far(home, first) == (5, 5)
    assert _redacted_so_far(home, second) == (6, 6)
    assert _redacted_so_far(home, second + timedelta(days=1)) == (6, 6)  # no file moved: none read, the count kept
    purge(home, "user_id", "cy", "asked to be forgotten")  # all of b.jsonl
    assert _redacted_so_far(home, second) == (3, 3)


def test_the_search_for_any_pattern_finds_what_each_pattern_finds():
    # a payload the joint search misses is not redacted at all: it must match wherever one pattern does,
    # case-insensitive patterns in any case, and nowhere else
    import duckdb

    from memcurator.secrets import ANY_PATTERN, PATTERNS

    texts = [*SECRETS.values(), SECRETS["bearer_token"].upper(), SECRETS["aws_secret_key"].upper(),
             SECRETS["password_in_url"].upper(), "AKIAIOSFODNN7EXAMPL", "ghp_short", "a bearer of news",
             "https://example.org/path", "no credential in this lesson", ""]
    conn = duckdb.connect()
    matches = lambda text, pattern: conn.execute("select regexp_matches($t, $p)",  # noqa: E731
                                                 {"t": text, "p": pattern}).fetchone()[0]
    found = [any(matches(text, pattern) for _, pattern in PATTERNS) for text in texts]
    assert found == [matches(text, ANY_PATTERN) for text in texts]
    assert sum(found) == len(SECRETS) + 3
