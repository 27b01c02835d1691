"""Agent run transcripts: tau-bench trajectories, SWE-agent ``.traj`` files, Claude Code session JSONL.

Every run becomes a ``run.start`` (its task: the first request, at most 500 characters) and a
``run.end`` with its outcome. Memory-tool calls become writes and recalls where the format has
them (Claude Code: the ``memory`` tool and the MCP memory server's tools). A format without a
memory tool (tau-bench, SWE-agent) gives each run one ``episodic`` entry, its digest: the
requests and the actions the agent took, so the store sees what runs did and repeated runs show
up as near-duplicates. What each format maps to and what is dropped is in docs/events.md.

Records that cannot be read (not JSON, not an object) are passed on for ingest to quarantine
with the reason; ids are derived from content, so importing a file twice adds nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

from memcurator.importers import iso, slug, stable_id, utc

TASK_CHARS = 500
DIGEST_CHARS = 4_000  # an episode note, not the transcript: long observations stay in the source
MEMORY_WRITE_COMMANDS = {"create": "file_text", "str_replace": "new_str", "insert": "insert_text"}


def read_source(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzipped (a broken gzip stream raises ``OSError``)."""
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, zlib.error) as error:
        raise OSError(f"corrupt gzip: {error}") from error


def _digest(parts: list[str]) -> str:
    text = " ".join(" ".join(p.split()) for p in parts if p and p.strip())
    return text[:DIGEST_CHARS]


def _fingerprint(obj) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _run_events(namespace: str, run: str, agent: str, start: datetime, end: datetime, task: str,
                outcome: str, extra_end: dict | None = None) -> list[dict]:
    """A run's start and end; ids from content, so a session split over two files gives two pairs
    that core.runs folds into one run (earliest start, latest end)."""
    envelope = {"namespace": namespace, "run_id": run, "agent_id": agent, "actor": "import"}
    return [
        {"id": stable_id(namespace, run, "start", iso(start), task[:TASK_CHARS]), "type": "run.start", "ts": iso(start), **envelope,
         "data": {"task": task[:TASK_CHARS]}},
        {"id": stable_id(namespace, run, "end", iso(end), outcome), "type": "run.end", "ts": iso(end), **envelope,
         "data": {"outcome": outcome, **(extra_end or {})}},
    ]


def _episode(namespace: str, run: str, agent: str, when: datetime, text: str, tags: list[str]) -> dict:
    return {"id": stable_id(namespace, run, "episode"), "type": "memory.write", "ts": iso(when), "namespace": namespace,
            "run_id": run, "agent_id": agent, "actor": "import",
            "data": {"entry_id": stable_id(namespace, "episode", run), "text": text, "class": "episodic", "tags": tags}}


def _listed(value) -> list:
    """A field that should hold a list: the list, or nothing (a record's other parts still count)."""
    return value if isinstance(value, list) else []


# --- tau-bench ---------------------------------------------------------------------------------

def _tau_action(call: dict) -> str:
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    args = fn.get("arguments") or "{}"
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            pass
    if isinstance(args, dict):
        args = " ".join(f"{k}={orjson.dumps(v).decode() if not isinstance(v, str) else v}" for k, v in args.items())
    return f"{fn.get('name', '?')}({args})"


def tau_bench(path: Path, namespace: str, ts: datetime) -> list:
    """A tau-bench results file: a JSON list of runs ``{task_id, trial, reward, info, traj}``.

    Maps: each run -> run.start (task: the user's first message) and run.end (reward 1 ->
    success, else failure), one minute apart in file order from ``ts`` (the format has no times);
    its digest (the user's messages and the agent's tool calls with arguments) -> one episodic
    write. Dropped: the system policy prompt, the agent's prose, tool outputs, the simulated
    user's hidden instruction and the benchmark's task id and expected actions (the answer key)."""
    try:
        runs = orjson.loads(read_source(path))
    except (orjson.JSONDecodeError, OSError, EOFError) as error:
        return [f"unreadable tau-bench file: {error}".encode()]
    if not isinstance(runs, list):
        return [orjson.dumps(runs)]
    events: list = []
    for index, record in enumerate(runs):
        traj = record.get("traj") if isinstance(record, dict) else None
        if not isinstance(traj, list):
            events.append(orjson.dumps(record))
            continue
        messages = [m for m in traj if isinstance(m, dict)]
        user = [m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
        calls = [c for m in messages if m.get("role") == "assistant" for c in _listed(m.get("tool_calls"))
                 if isinstance(c, dict)]
        run = "tau-" + _fingerprint([index, traj])
        start = ts + timedelta(minutes=index)
        reward = record.get("reward")
        outcome = "success" if isinstance(reward, (int, float)) and reward >= 1 else "failure"
        events += _run_events(namespace, run, "tau-bench-agent", start, start + timedelta(seconds=50),
                              user[0] if user else "(no user message)", outcome)
        text = _digest(["Requests:", *user, "Actions:", *[_tau_action(c) for c in calls]])
        if text:
            events.append(_episode(namespace, run, "tau-bench-agent", start + timedelta(seconds=45), text, []))
    return events


# --- SWE-agent ---------------------------------------------------------------------------------

SWE_OUTCOMES = {"submitted": "unknown"}  # a submission is not a verified fix: the format has no verdict


def swe_agent(path: Path, namespace: str, ts: datetime) -> list:
    """A SWE-agent ``.traj`` file: ``{history, trajectory, info}`` for one run.

    Maps: the run -> run.start (task: the first user message, i.e. the issue) and run.end
    (``exit_status`` "submitted" -> unknown, since nothing in the file says the patch is right;
    any other exit status, e.g. exit_cost or exit_context -> aborted; none -> unknown; the exit
    status is kept in run.end's data), at ``ts`` (the format has no times); the digest (the task
    and the commands the agent ran) -> one episodic write tagged with the files it opened or
    created. Dropped: system prompts, demonstrations, observations (tool output), thoughts, the
    submitted patch, model statistics."""
    try:
        record = orjson.loads(read_source(path))
    except (orjson.JSONDecodeError, OSError, EOFError) as error:
        return [f"unreadable SWE-agent trajectory: {error}".encode()]
    if not isinstance(record, dict) or not isinstance(record.get("history") or record.get("trajectory"), list):
        return [orjson.dumps(record)]
    history = [m for m in _listed(record.get("history")) if isinstance(m, dict)]
    steps = [s for s in _listed(record.get("trajectory")) if isinstance(s, dict)]
    users = [m["content"] for m in history if m.get("role") == "user" and isinstance(m.get("content"), str)]
    actions = [s["action"].strip() for s in steps if isinstance(s.get("action"), str) and s["action"].strip()]
    if not steps:  # function-calling histories keep the actions on the assistant messages
        actions = [str(c["function"].get("arguments", "")).strip() for m in history if m.get("role") == "assistant"
                   for c in _listed(m.get("tool_calls")) if isinstance(c, dict) and isinstance(c.get("function"), dict)]
        actions = [a for a in actions if a]
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    status = info.get("exit_status")
    if status is not None and not isinstance(status, str):
        status = orjson.dumps(status).decode()
    outcome = SWE_OUTCOMES.get(status, "aborted") if status else "unknown"
    run = "swe-" + _fingerprint(record)
    files = sorted({slug(a.split()[1].strip("'\"")) for a in actions
                    if a.split()[0] in ("open", "create") and len(a.split()) > 1})
    events = _run_events(namespace, run, "swe-agent", ts, ts + timedelta(minutes=30), users[0] if users else path.stem,
                         outcome, {"exit_status": status} if status else None)
    text = _digest(["Task:", users[0][:1500] if users else path.stem, "Actions:", *(a.splitlines()[0] for a in actions)])
    events.append(_episode(namespace, run, "swe-agent", ts + timedelta(minutes=29), text, files[:20]))
    return events


# --- Claude Code -------------------------------------------------------------------------------

def _blocks(message) -> list:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _parse_time(value) -> datetime | None:
    """A record's time in UTC (one without a zone is UTC), or None when it is no time or falls
    outside what an event's time can be."""
    if not isinstance(value, str):
        return None
    try:
        return utc(datetime.fromisoformat(value.replace("Z", "+00:00"))).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


def _mcp_entry(namespace: str, name: str, observation: str) -> str:
    """The entry id the MCP memory.jsonl importer gives the same observation: both sources meet."""
    return stable_id(namespace, "obs", name, observation)


def _memory_calls(namespace: str, session: str, when: datetime, block: dict, results: dict) -> list[dict]:
    name = block.get("name") if isinstance(block.get("name"), str) else ""
    args = block.get("input") if isinstance(block.get("input"), dict) else {}
    envelope = {"namespace": namespace, "run_id": session, "agent_id": "claude-code", "actor": "agent"}
    call = str(block.get("id") or _fingerprint(block))
    out: list[dict] = []
    if name == "memory" and isinstance(args.get("command"), str) and args["command"] in MEMORY_WRITE_COMMANDS:
        text = args.get(MEMORY_WRITE_COMMANDS[args["command"]])
        if isinstance(text, str) and text.strip():
            out.append({"id": stable_id(namespace, session, call), "type": "memory.write", "ts": iso(when), **envelope,
                        "data": {"entry_id": stable_id(namespace, "memory-file", str(args.get("path")), text),
                                 "text": text, "class": "lesson", "tags": [slug(str(args.get("path") or "memory"))]}})
    elif name.endswith("create_entities") or name.endswith("add_observations"):
        items = args.get("entities") if name.endswith("create_entities") else args.get("observations")
        for item in _listed(items):
            subject = item.get("name") or item.get("entityName") if isinstance(item, dict) else None
            observations = (item.get("observations") if "observations" in item else item.get("contents")) \
                if isinstance(item, dict) else None
            if not isinstance(subject, str) or not isinstance(observations, list):
                out.append(orjson.dumps(item))  # no entity and observations to read: ingest quarantines it
                continue
            for obs in observations:
                # as the memory.jsonl importer does: an observation that is no text, or blank, is a write
                # with it as its text, which ingest quarantines
                readable = isinstance(obs, str) and bool(obs.strip())
                said = obs if isinstance(obs, str) else orjson.dumps(obs).decode()
                out.append({"id": stable_id(namespace, session, call, subject, said), "type": "memory.write",
                            "ts": iso(when), **envelope,
                            "data": {"entry_id": _mcp_entry(namespace, subject, said),
                                     "text": f"{subject} ({item.get('entityType') or 'entity'}): {obs}" if readable else obs,
                                     "class": "relationship", "tags": [slug(subject)]}})
    elif name.endswith(("search_nodes", "open_nodes", "read_graph")):
        found = []
        try:
            graph = orjson.loads(results.get(call) or "null")
        except orjson.JSONDecodeError:
            graph = None
        for entity in (graph or {}).get("entities", []) if isinstance(graph, dict) else []:
            if isinstance(entity, dict) and isinstance(entity.get("name"), str):
                found += [_mcp_entry(namespace, entity["name"], o) for o in _listed(entity.get("observations"))
                          if isinstance(o, str)]
        query = args.get("query") or " ".join(map(str, _listed(args.get("names")))) or "(whole graph)"
        out.append({"id": stable_id(namespace, session, call), "type": "memory.recall", "ts": iso(when), **envelope,
                    "data": {"query": str(query),
                             "results": [{"entry_id": e, "rank": r, "injected": True} for r, e in enumerate(found, 1)]}})
    return out


def claude_code(path: Path, namespace: str, ts: datetime) -> list:
    """A Claude Code session file (JSON Lines; one or more sessions by ``sessionId``).

    Maps: each session -> run.start at its first message (task: the first user text) and run.end
    at its last (outcome unknown: sessions record none); ``memory`` tool writes (create,
    str_replace, insert) -> lesson writes; MCP memory ``create_entities`` / ``add_observations``
    -> relationship writes with the same entry ids the memory.jsonl importer gives; MCP
    ``search_nodes`` / ``open_nodes`` / ``read_graph`` -> recalls of the entities returned; a
    ``summary`` record -> an episodic write (the session's own digest). Dropped: assistant prose,
    other tools' calls and results, token usage. Lines that are not JSON objects are passed on
    for ingest to quarantine, and so are message records without a time, a session or readable
    content, summaries without text and memory-tool entities that cannot be read (a record that
    says nothing is never dropped silently). A time without a zone is UTC."""
    sessions: dict[str, dict] = {}
    summaries: list[tuple[str, str]] = []
    passed: list = []
    owner_of: dict[str, str] = {}
    try:
        source = read_source(path)
    except OSError as error:
        return [f"unreadable Claude Code session file: {error}".encode()]
    for raw in source.splitlines():
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            passed.append(raw)
            continue
        if not isinstance(record, dict):
            passed.append(raw)
            continue
        if record.get("type") == "summary":
            if isinstance(record.get("summary"), str) and record["summary"].strip():
                summaries.append((str(record.get("leafUuid") or ""), record["summary"]))
            else:
                passed.append(raw)  # a summary without its text
            continue
        when, session = _parse_time(record.get("timestamp")), record.get("sessionId")
        if record.get("type") not in ("user", "assistant") or when is None or not isinstance(session, str):
            passed.append(raw)
            continue
        run = "cc-" + slug(session)
        state = sessions.setdefault(run, {"start": when, "end": when, "task": None, "blocks": []})
        state["start"], state["end"] = min(state["start"], when), max(state["end"], when)
        if isinstance(record.get("uuid"), str):
            owner_of[record["uuid"]] = run
        message = record.get("message")
        if not isinstance(message, dict) or not _blocks(message):
            passed.append(raw)
            continue
        for block in _blocks(message):
            if record["type"] == "user" and block.get("type") == "text" and state["task"] is None \
                    and isinstance(block.get("text"), str) and block["text"].strip():
                state["task"] = block["text"]
            state["blocks"].append((when, block))
    events: list = []
    for run, state in sorted(sessions.items()):
        results = {str(b.get("tool_use_id")): b.get("content") if isinstance(b.get("content"), str) else
                   orjson.dumps(b.get("content")).decode() for _, b in state["blocks"] if b.get("type") == "tool_result"}
        for when, block in state["blocks"]:
            if block.get("type") == "tool_use":
                events += _memory_calls(namespace, run, when, block, results)
        events += _run_events(namespace, run, "claude-code", state["start"], state["end"],
                              state["task"] or "(no user text)", "unknown")
    fallback = max(sessions, key=lambda r: sessions[r]["end"]) if sessions else None
    for leaf, text in summaries:
        run = owner_of.get(leaf, fallback)
        when = sessions[run]["end"] if run else ts
        events.append({"id": stable_id(namespace, "summary", leaf, text), "type": "memory.write", "ts": iso(when),
                       "namespace": namespace, "run_id": run, "agent_id": "claude-code", "actor": "agent",
                       "data": {"entry_id": stable_id(namespace, "summary", text), "text": text, "class": "episodic",
                                "tags": []}})
    return events + passed
