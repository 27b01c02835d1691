"""The pluggable judge: an OpenAI-compatible endpoint on loopback, with batching, timeouts and fallback."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest

from memcurator.judges import ChatJudge, HeuristicJudge

PAIRS = pl.DataFrame({"text_a": ["the cache is warm", "deploy on fridays", "use helm"],
                      "text_b": ["the cache is not warm", "deploy on fridays after noon", "use helm charts"]})


class _Handler(BaseHTTPRequestHandler):
    delay = 0.0
    requests: list = []
    headers_seen: list = []
    label = None  # set: every pair gets this label (a model that changed its mind)

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        type(self).headers_seen.append((self.path, dict(self.headers)))
        time.sleep(type(self).delay)
        listing = body["messages"][1]["content"]
        n = listing.count("A: ")
        answers = [{"i": i, "label": type(self).label or (
                        "contradictory" if "not" in listing.split(f"{i}. A:")[1].split("\n")[1] else "compatible"),
                    "confidence": 0.9} for i in range(1, n + 1)]
        reply = {"choices": [{"message": {"content": "here you go: " + json.dumps(answers)}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    _Handler.delay, _Handler.requests, _Handler.headers_seen, _Handler.label = 0.0, [], [], None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_chat_judge_labels_pairs_in_batches(endpoint):
    out = ChatJudge(endpoint, "tiny", batch_size=2).classify(PAIRS)
    assert out["label"].to_list() == ["contradictory", "compatible", "compatible"]
    assert set(out["judge"]) == {"chat:tiny"}
    assert len(_Handler.requests) == 2 and _Handler.requests[0]["model"] == "tiny"


def test_endpoint_down_falls_back_to_the_heuristics():
    out = ChatJudge("http://127.0.0.1:9/v1", "tiny", timeout=1).classify(PAIRS)
    assert out["label"].to_list() == HeuristicJudge().classify(PAIRS)["label"].to_list()
    assert all(j.startswith("heuristic (fallback") for j in out["judge"])


def test_slow_endpoint_times_out_and_falls_back(endpoint):
    _Handler.delay = 2.0
    started = time.monotonic()
    out = ChatJudge(endpoint, "tiny", timeout=0.3, batch_size=10).classify(PAIRS)
    assert time.monotonic() - started < 1.9
    assert all(j.startswith("heuristic (fallback") for j in out["judge"])


def _night_of_two_conflicting_notes(conn, home, endpoint: str, timeout: float | None = None) -> None:
    """Ingest two notes on one subject that disagree and derive a night with the chat judge at ``endpoint``."""
    from memcurator import ingest
    from memcurator.config import CurationConfig
    from memcurator.night import derive_night
    from tests.conftest import write, write_jsonl

    cfg = CurationConfig(judge_endpoint=endpoint, judge_model="tiny",
                         **({"judge_timeout_seconds": timeout} if timeout else {}))
    write_jsonl(home.landing / "f.jsonl", [
        write("the ledger cache is warm at start", entry_id="a", ts="2026-11-20T00:00:00Z", data={"tags": ["cache"]}),
        write("the ledger cache is not warm at start", entry_id="b", ts="2026-11-21T00:00:00Z", data={"tags": ["cache"]})])
    ingest.ingest_landing(conn, home.landing, None, cfg)
    derive_night(conn, datetime(2026, 11, 30), cfg)


def test_contradictions_use_the_configured_judge(endpoint, conn, home):
    _night_of_two_conflicting_notes(conn, home, endpoint)
    assert conn.execute("select detector, status from core.contradictions").fetchall() == [("chat:tiny", "open")]


def test_a_pair_the_model_did_not_answer_is_asked_again_the_next_night(endpoint, conn, home):
    """The fallback's verdict is not kept: the next night, with nothing new in the log, asks the model
    again and its conflict takes the answer (the conflicts kept, not derived whole)."""
    from memcurator.config import CurationConfig
    from memcurator.night import derive_night

    _Handler.delay = 1.0  # beyond the timeout
    _night_of_two_conflicting_notes(conn, home, endpoint, timeout=0.2)
    assert conn.execute("select detector from core.contradictions").fetchall() != [("chat:tiny",)]
    assert conn.execute("select count(*) from core.judged_pairs").fetchone() == (0,)
    _Handler.delay = 0.0
    derive_night(conn, datetime(2026, 11, 30), CurationConfig(judge_endpoint=endpoint, judge_model="tiny",
                                                              judge_timeout_seconds=0.2))
    assert conn.execute("select detector, status from core.contradictions").fetchall() == [("chat:tiny", "open")]
    kept = "select derived_all from work.refreshes where table_name = 'core.contradictions'"
    assert conn.execute(kept).fetchone() == (False,)
    assert conn.execute("select count(*) from core.judged_pairs").fetchone() == (1,)


def test_the_judge_key_comes_from_the_environment_and_no_table_holds_it(endpoint, conn, home, monkeypatch):
    """The key is sent as a bearer token from MEMCURATOR_JUDGE_API_KEY; a password or key written into
    the endpoint's URL is not sent as user info, and neither reaches the store: the recorded settings and
    the judge's version hold the endpoint without them."""
    monkeypatch.setenv("MEMCURATOR_JUDGE_API_KEY", "sk-environment-secret")
    with_secrets = endpoint.replace("http://", "http://someone:url-secret@") + "?token=query-secret"
    _night_of_two_conflicting_notes(conn, home, with_secrets)

    assert conn.execute("select detector from core.contradictions").fetchall() == [("chat:tiny",)]
    (path, headers), = _Handler.headers_seen
    assert headers["Authorization"] == "Bearer sk-environment-secret"
    assert path == "/v1/chat/completions?token=query-secret"
    public = endpoint + "?token=***"
    settings = json.loads(conn.execute("select settings from core.audit_settings").fetchone()[0])
    assert settings["judge_endpoint"] == public
    assert conn.execute("select distinct judge from core.judged_pairs").fetchall() == [(f"chat:{public}:tiny",)]
    tables = conn.execute("select schema_name, table_name from duckdb_tables() where not temporary").fetchall()
    assert len(tables) > 20
    for schema, table in tables:
        held = str(conn.execute(f"select * from {schema}.{table}").fetchall())
        assert not any(secret in held for secret in ("url-secret", "query-secret", "sk-environment-secret")), table


def test_the_reproducibility_check_takes_the_models_verdicts_as_given(endpoint, home):
    """A model asked again need not answer the same: the check derives with the night's stored verdicts of
    the chat judge and asks it nothing; asked to ask again, it finds the model's second thoughts."""
    from memcurator import rederive, store

    with store.connect(home.store) as conn:
        _night_of_two_conflicting_notes(conn, home, endpoint)
    asked = len(_Handler.requests)
    assert asked > 0
    _Handler.label = "compatible"  # the model has changed its mind
    report = rederive.rederive_check(home.store)
    assert report.identical, report.differing
    assert report.reused_verdicts == 1 and len(_Handler.requests) == asked  # nothing asked
    assert "(stored verdicts of the chat judge taken as given: 1)" in report.verdict()
    asking = rederive.rederive_check(home.store, ask_judge=True)
    assert len(_Handler.requests) > asked and asking.reused_verdicts == 0
    assert {"core.contradictions", "core.judged_pairs"} <= set(asking.differing)
    # the command: the same, and --ask-judge exits 1 on the difference
    from typer.testing import CliRunner

    from memcurator.cli import app

    given = CliRunner().invoke(app, ["rederive-check", "--home", str(home.root)])
    assert given.exit_code == 0 and "of the chat judge taken as given: 1" in " ".join(given.output.split())
    assert CliRunner().invoke(app, ["rederive-check", "--home", str(home.root), "--ask-judge"]).exit_code == 1


def test_public_endpoint_drops_user_info_and_masks_query_values():
    from memcurator.config import public_endpoint

    assert public_endpoint("") == ""
    assert public_endpoint("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"
    assert public_endpoint("https://me:pw@api.example.org/v1/?api-version=2&key=k") == \
        "https://api.example.org/v1/?api-version=***&key=***"
    assert public_endpoint("https://token@[::1]:8443/v1#frag") == "https://[::1]:8443/v1"


def test_the_reproducibility_check_asks_the_judge_at_its_own_url(endpoint, home):
    """The night recorded the endpoint with the query's values masked: asking again, the check takes it
    whole from the home's settings (the command) or refuses, instead of asking the masked URL."""
    from typer.testing import CliRunner

    from memcurator import rederive, store
    from memcurator.cli import app
    from memcurator.config import SettingsError

    with_key = endpoint + "?token=query-secret"
    with store.connect(home.store) as conn:
        _night_of_two_conflicting_notes(conn, home, with_key)
    asked = len(_Handler.headers_seen)
    with pytest.raises(SettingsError, match=r"token=\*\*\*"):
        rederive.rederive_check(home.store, ask_judge=True)
    refused = CliRunner().invoke(app, ["rederive-check", "--home", str(home.root), "--ask-judge"])
    assert refused.exit_code == 1 and "settings.toml" in " ".join(refused.output.split())
    assert len(_Handler.headers_seen) == asked  # nothing asked at the masked URL
    given = CliRunner().invoke(app, ["rederive-check", "--home", str(home.root), "--ask-judge",
                                     "--set", f"judge_endpoint={with_key}"])
    assert given.exit_code == 0, given.output
    assert {path for path, _ in _Handler.headers_seen[asked:]} == {"/v1/chat/completions?token=query-secret"}
    asked = len(_Handler.headers_seen)
    home.settings.write_text(f'judge_endpoint = "{with_key}"\n')
    given = CliRunner().invoke(app, ["rederive-check", "--home", str(home.root), "--ask-judge"])
    assert given.exit_code == 0, given.output
    assert {path for path, _ in _Handler.headers_seen[asked:]} == {"/v1/chat/completions?token=query-secret"}
