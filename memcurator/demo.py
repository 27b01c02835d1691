"""A seeded, realistic demo fleet: transcript files plus the ground truth kept outside the log.

What real stores contain, in roughly real proportions: the same lesson rephrased many times,
durable principles written once and rarely recalled, narrow one-off notes, operational trivia,
config facts corrected with and without explicit supersede links, facts with validity windows,
identity and preference facts, passing and failing checks (some transient), recalls with
injection flags, and hostile or malformed lines. Same seed and end date give the same files.
"""

from __future__ import annotations

import gzip
import random
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Callable

import orjson

SERVICES = ["billing-api", "auth-service", "search-indexer", "checkout", "ledger", "notifier",
            "gateway", "scheduler", "feature-store", "report-builder", "image-resizer", "sync-worker"]
FILES = ["src/payments/retry.py", "src/auth/tokens.py", "deploy/helm/values.yaml", "src/search/index.py",
         "ci/pipeline.yml", "src/ledger/posting.py", "infra/terraform/main.tf", "src/api/routes.py"]
TEAMS = ["team-orion", "team-vega", "team-lyra", "team-draco"]
USERS = ["alice", "bob", "chen", "dana", "emeka", "farah", "goran", "hana"]

# Lessons: (template, slots). Paraphrases come from prefixes, synonym swaps and suffixes.
LESSONS = [
    "always run the database migrations before deploying the {svc} service",
    "retry calls to {svc} with exponential backoff and jitter instead of a fixed delay",
    "pin the client library version in {file} before upgrading {svc}",
    "check the feature flag state before changing the rollout percentage for {svc}",
    "clear the build cache when the {svc} integration tests fail with stale fixtures",
    "read the {svc} error budget dashboard before approving a risky change",
    "use the staging copy of {svc} for load tests and never the production one",
    "validate the schema of incoming events before writing them to {svc}",
    "rotate the {svc} credentials through the secrets manager and never by hand",
    "split large batch jobs on {svc} into chunks of at most ten thousand rows",
    "add a timeout to every outbound request from {svc} to avoid hung workers",
    "keep the {file} change and the {svc} deploy in separate pull requests",
    "drain connections from {svc} before restarting its pods",
    "tag every {svc} release in git so rollbacks know what to return to",
    "write a failing test that reproduces the {svc} bug before fixing it",
    "compare the {svc} metrics against last week before declaring an incident over",
    "ask the owning team before adding a new dependency to {svc}",
    "prefer feature flags over long lived branches for {svc} work",
    "snapshot the {svc} database before any manual data repair",
    "document every manual step of the {svc} runbook as you perform it",
    "watch memory usage of {svc} for an hour after raising its cache size",
    "grep the logs of {svc} for the request id instead of scrolling dashboards",
    "disable the cron triggers of {svc} during a schema migration",
    "warm the {svc} caches after a cold start before sending real traffic",
    "limit concurrent writers to {svc} during backfills",
    "review the diff of {file} line by line when it touches authentication",
    "confirm the time zone of timestamps coming from {svc} before comparing them",
    "escape user input before it reaches the {svc} query builder",
    "check disk headroom on {svc} hosts before enabling verbose logging",
    "send a heads up to {team} before changing the {svc} public API",
]
SYNONYMS = {
    "always": ["always", "consistently", "make sure to"],
    "before": ["before", "prior to"],
    "deploying": ["deploying", "shipping", "releasing"],
    "instead of": ["instead of", "rather than"],
    "never": ["never", "not"],
    "use": ["use", "rely on"],
    "check": ["check", "verify", "confirm"],
    "large": ["large", "big", "huge"],
    "avoid": ["avoid", "prevent"],
}
PREFIXES = ["", "", "lesson: ", "note to self: ", "remember to ", "important: ", "learned today: "]
SUFFIXES = ["", "", "", " (learned the hard way)", " - this bit us again", " as the postmortem said",
            " because it broke last time"]

PRINCIPLES = [
    "Prefer idempotent operations so that any step can be retried safely.",
    "Make every change reversible, and know how to roll back before rolling forward.",
    "Measure before optimising; a profile beats a guess.",
    "Fail loudly on bad input and keep the rejected record with its reason.",
    "Small, frequent deploys are safer than large, rare ones.",
    "Write down the reason for every decision where the next person will look.",
    "Treat configuration as code: reviewed, versioned and tested.",
    "Own the interface, not the implementation: depend on contracts.",
]
# One-off notes: combinatorial phrases, so two notes share little beyond chance words.
NARROW_WHO = ["{user}", "the night shift agent", "a reviewer from {team}", "the canary job", "an intern",
              "support", "the billing robot", "the oncall engineer", "a customer in Lisbon", "the scheduler"]
NARROW_WHAT = ["hit a 502 from {svc}", "found a typo in {file}", "restarted worker node-{m}",
               "saw invoice {n} rendered twice", "filed ticket #{n}", "lost a websocket to {svc}",
               "noticed {m} stale locks", "uploaded artifact {n}.tar.gz", "bisected commit {n}",
               "got a checksum mismatch on bucket shard {m}", "paused queue partition {m}",
               "reran flaky test_{svcu}_{n}", "patched {file} by hand", "measured {n} requests per second",
               "reverted hotfix-{n}", "opened incident {n}", "copied {file} to /tmp/scratch-{n}"]
NARROW_WHEN = ["around 03:{m:02d}", "during the demo", "after lunch", "while the backup ran",
               "right before the release freeze", "in run {run}", "on host node-{m}", "for request {n}",
               "in the staging cluster", "as the migration finished", "before the standup", "in region eu-west-{m}"]
OPERATIONAL = [
    "deploy queue for {svc} has {n} pending jobs right now",
    "{svc} is currently in maintenance mode today",
    "the {svc} canary is at {n} percent at the moment",
    "on-call for {svc} this week is {user}",
]
IDENTITY = ["the user's name is {User}", "{User} works on {team} as a backend engineer",
            "{User} is based in the Europe/Berlin time zone"]
PREFERENCE = ["{User} prefers short answers with code first", "{User} wants pull requests under 300 lines",
              "{User} prefers British spelling in documentation"]


@dataclass
class Truth:
    seed: int
    end: str
    duplicate_groups: dict[str, dict] = field(default_factory=dict)
    principles: list[list[str]] = field(default_factory=list)
    narrow: list[list[str]] = field(default_factory=list)
    operational: list[list[str]] = field(default_factory=list)
    stale: list[list[str]] = field(default_factory=list)
    contradictions: list[dict] = field(default_factory=list)
    expired: list[list[str]] = field(default_factory=list)
    failing_assertions: list[list[str]] = field(default_factory=list)
    malformed_lines: int = 0
    events: int = 0
    writes: int = 0


@dataclass
class _Entry:
    namespace: str
    entry_id: str
    kind: str
    written: datetime


class _Fleet:
    def __init__(self, seed: int, namespaces: int, end: date, days: int):
        self.rng = random.Random(seed)
        self.end = end
        self.start = end - timedelta(days=days - 1)
        self.days = days
        self.namespaces = [f"fleet-{i:03d}" if i % 3 else f"user-{USERS[i // 3 % len(USERS)]}-{i:03d}"
                           for i in range(namespaces)]
        self.truth = Truth(seed=seed, end=end.isoformat())
        self.events_by_day: dict[date, list[bytes]] = {}
        self.entries: dict[str, list[_Entry]] = {ns: [] for ns in self.namespaces}
        self.latest_by_kind: dict[tuple[str, str], _Entry] = {}
        self.counter = 0
        self.id_prefix = ""

    # -- helpers -----------------------------------------------------------------------------
    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{self.id_prefix}{prefix}{self.counter:09d}"

    def emit(self, day: date, event: dict) -> None:
        self.events_by_day.setdefault(day, []).append(orjson.dumps(event))
        self.truth.events += 1

    def when(self, day: date) -> datetime:
        return datetime(day.year, day.month, day.day) + timedelta(seconds=self.rng.randrange(86_400))

    @staticmethod
    def iso(ts: datetime) -> str:
        return ts.isoformat(timespec="seconds") + "Z"

    def slots(self, ns: str) -> dict:
        rng = self.rng
        svc = rng.choice(SERVICES)
        user = USERS[zlib.crc32(ns.encode()) % len(USERS)] if ns.startswith("user-") else rng.choice(USERS)
        return {"svc": svc, "svcu": svc.replace("-", "_"), "file": rng.choice(FILES), "n": rng.randrange(100, 99_999),
                "m": rng.randrange(60), "run": f"r{rng.randrange(10**6)}", "user": user, "User": user.capitalize(),
                "team": rng.choice(TEAMS)}

    def paraphrase(self, text: str) -> str:
        rng = self.rng
        for word, options in SYNONYMS.items():
            if f" {word} " in f" {text} " and rng.random() < 0.35:
                text = f" {text} ".replace(f" {word} ", f" {rng.choice(options)} ", 1).strip()
        text = rng.choice(PREFIXES) + text + rng.choice(SUFFIXES)
        if rng.random() < 0.5:
            text = text[0].upper() + text[1:]
        return text + ("." if rng.random() < 0.6 else "")

    def write(self, ns: str, ts: datetime, run: str, agent: str, text: str, cls: str, kind: str,
              tags: list[str], **extra) -> str:
        entry_id = extra.pop("entry_id", None) or self.next_id("m")
        data = {"entry_id": entry_id, "text": text, "class": cls, "tags": tags, **extra}
        self.emit(ts.date(), {"id": self.next_id("ev"), "type": "memory.write", "ts": self.iso(ts), "namespace": ns,
                              "run_id": run, "agent_id": agent, "actor": "agent", "data": data})
        entry = _Entry(ns, entry_id, kind, ts)
        self.entries[ns].append(entry)
        self.latest_by_kind[(ns, kind)] = entry
        self.truth.writes += 1
        return entry_id

    # -- the fleet -----------------------------------------------------------------------------
    def generate(self, writes: int, progress: Callable[[int], None] | None = None) -> None:
        rng = self.rng
        per_ns = max(1, writes // len(self.namespaces))
        for ns_index, ns in enumerate(self.namespaces):
            agents = [f"agent-{ns_index:03d}-{k}" for k in range(rng.randint(2, 5))]
            self._namespace(ns, agents, per_ns)
            if progress:
                progress(per_ns)

    def _namespace(self, ns: str, agents: list[str], budget: int) -> None:
        rng = self.rng
        # Topic plan: lessons with many paraphrases, a few principles, the rest mixed.
        # each lesson group of a namespace has its own template: one lesson, restated, never two
        # lessons that differ only by the service they name
        lesson_groups = []
        for template in rng.sample(LESSONS, k=len(LESSONS)):
            base = template.format(**self.slots(ns))
            copies = min(40, max(2, int(rng.paretovariate(1.0) * 3)))
            lesson_groups.append((base, copies, self.next_id("g")))
        config_facts = [(rng.choice(SERVICES), rng.choice(["timeout", "max connections", "batch size", "retry limit"]))
                        for _ in range(max(2, budget // 80))]
        remaining = budget
        written_group: dict[str, list[str]] = {}
        # Runs write 3 entries on average; spread them evenly over the days, the last day takes the rest.
        rate = budget / (3 * self.days)
        for offset in range(self.days):
            day = self.start + timedelta(days=offset)
            runs_today = int(rate) + (rng.random() < rate - int(rate))
            last_day = offset == self.days - 1
            while remaining > 0 and (runs_today > 0 or last_day):
                runs_today -= 1
                remaining -= self._run(ns, agents, day, lesson_groups, written_group, config_facts, offset)
        for base, _, gid in lesson_groups:
            members = written_group.get(gid, [])
            if len(members) > 1:
                self.truth.duplicate_groups[gid] = {"namespace": ns, "entries": members}

    def _run(self, ns, agents, day, lesson_groups, written_group, config_facts, offset) -> int:
        rng = self.rng
        agent = rng.choice(agents)
        run = self.next_id("run")
        start = self.when(day)
        self.emit(day, {"id": self.next_id("ev"), "type": "run.start", "ts": self.iso(start), "namespace": ns,
                        "run_id": run, "agent_id": agent, "actor": "agent", "data": {"task": f"task-{rng.randrange(50)}"}})
        ts = start
        n_writes = rng.randint(2, 4)
        for _ in range(n_writes):
            ts += timedelta(seconds=rng.randrange(5, 300))
            self._one_write(ns, agent, run, ts, lesson_groups, written_group, config_facts, offset)
        for _ in range(rng.randint(0, 2)):
            ts += timedelta(seconds=rng.randrange(5, 300))
            self._recall(ns, agent, run, ts)
        if rng.random() < 0.25:
            ts += timedelta(seconds=rng.randrange(5, 300))
            self._check(ns, run, agent, ts)
        ts += timedelta(seconds=rng.randrange(5, 300))
        self.emit(ts.date(), {"id": self.next_id("ev"), "type": "run.end", "ts": self.iso(ts), "namespace": ns,
                              "run_id": run, "agent_id": agent, "actor": "agent",
                              "data": {"outcome": rng.choices(["success", "failure", "aborted"], [8, 2, 1])[0]}})
        return n_writes

    def _one_write(self, ns, agent, run, ts, lesson_groups, written_group, config_facts, offset) -> None:
        rng = self.rng
        kind = rng.choices(["lesson", "principle", "narrow", "operational", "config", "identity", "validity"],
                           [40, 3, 22, 14, 12, 5, 4])[0]
        if kind == "lesson":
            base, copies, gid = rng.choice(lesson_groups)
            members = written_group.setdefault(gid, [])
            if len(members) >= copies and rng.random() < 0.7:
                kind = "narrow"
            else:
                text = self.paraphrase(base)
                tags = sorted({w for w in base.split() if w in SERVICES or w in FILES})
                members.append(self.write(ns, ts, run, agent, text, "lesson", "lesson", tags,
                                          trust=round(rng.uniform(0.6, 1.0), 2)))
                return
        if kind == "principle":
            text = rng.choice(PRINCIPLES)
            eid = self.write(ns, ts, run, agent, text, "principle", "principle", [],
                             **({"generality": 3} if rng.random() < 0.5 else {}))
            self.truth.principles.append([ns, eid])
        elif kind == "narrow":
            text = " ".join(rng.choice(pool) for pool in (NARROW_WHO, NARROW_WHAT, NARROW_WHEN)).format(**self.slots(ns))
            eid = self.write(ns, ts, run, agent, text, rng.choice(["episodic", "lesson"]), "narrow", [],
                             importance=round(rng.uniform(0.1, 0.6), 2))
            self.truth.narrow.append([ns, eid])
        elif kind == "operational":
            slots = self.slots(ns)
            text = rng.choice(OPERATIONAL).format(**slots)
            eid = self.write(ns, ts, run, agent, text, "operational", "operational", [slots["svc"]])
            self.truth.operational.append([ns, eid])
        elif kind == "config":
            self._config_fact(ns, agent, run, ts, config_facts)
        elif kind == "identity":
            template = rng.choice(IDENTITY + PREFERENCE)
            cls = "identity" if template in IDENTITY else "preference"
            slots = self.slots(ns)
            self.write(ns, ts, run, agent, template.format(**slots), cls, cls, [f"user-{slots['user']}"])
        else:
            svc = rng.choice(SERVICES)
            until = ts + timedelta(days=rng.randint(3, 60))
            text = f"{svc} is owned by {rng.choice(TEAMS)} for the current quarter"
            eid = self.write(ns, ts, run, agent, text, "relationship", "validity", [svc],
                             valid_from=self.iso(ts), valid_until=self.iso(until))
            if until < datetime.combine(self.end + timedelta(days=1), datetime.min.time()):
                self.truth.expired.append([ns, eid])

    def _config_fact(self, ns, agent, run, ts, config_facts) -> None:
        rng = self.rng
        svc, attr = rng.choice(config_facts)
        unit = {"timeout": " seconds", "max connections": "", "batch size": " rows", "retry limit": " attempts"}[attr]
        value = rng.choice([5, 10, 20, 30, 50, 100, 200])
        old = self.latest_by_kind.get((ns, f"config:{svc}:{attr}"))
        text = rng.choice([f"the {attr} of {svc} is {value}{unit}", f"{svc} {attr}: {value}{unit}",
                           f"set {svc} {attr} to {value}{unit}"])
        if old is None:
            eid = self.write(ns, ts, run, agent, text, "config", f"config:{svc}:{attr}", [svc, attr.replace(' ', '-')],
                             trust=0.9)
            return
        explicit = rng.random() < 0.5
        extra = {"supersedes": old.entry_id, "reason": f"{attr} of {svc} changed"} if explicit else {}
        eid = self.write(ns, ts, run, agent, text, "config", f"config:{svc}:{attr}", [svc, attr.replace(' ', '-')],
                         trust=0.9, **extra)
        self.truth.stale.append([ns, old.entry_id])
        self.truth.contradictions.append({"namespace": ns, "old": old.entry_id, "new": eid, "explicit": explicit})
        if rng.random() < 0.4:
            check_ts = ts + timedelta(seconds=30)
            self.emit(check_ts.date(), {"id": self.next_id("ev"), "type": "memory.check", "ts": self.iso(check_ts),
                                        "namespace": ns, "run_id": run, "agent_id": agent, "actor": "test",
                                        "data": {"entry_id": old.entry_id, "status": "fail", "error_class": "assertion",
                                                 **({"corrected_by": eid} if rng.random() < 0.5 else {})}})
            self.truth.failing_assertions.append([ns, old.entry_id])

    def _recall(self, ns, agent, run, ts) -> None:
        rng = self.rng
        pool = self.entries[ns]
        if not pool:
            return
        recent = pool[-200:]
        k = min(len(recent), rng.randint(1, 5))
        picked = rng.sample(recent, k)
        results = [{"entry_id": e.entry_id, "rank": i + 1, "injected": i < 3} for i, e in enumerate(picked)]
        self.emit(ts.date(), {"id": self.next_id("ev"), "type": "memory.recall", "ts": self.iso(ts), "namespace": ns,
                              "run_id": run, "agent_id": agent, "actor": "agent",
                              "data": {"query": f"how to handle {rng.choice(SERVICES)}", "results": results}})

    def _check(self, ns, run, agent, ts) -> None:
        rng = self.rng
        candidates = [e for e in self.entries[ns][-300:] if e.kind in ("lesson", "principle") or e.kind.startswith("config")]
        if not candidates:
            return
        entry = rng.choice(candidates)
        transient = rng.random() < 0.15
        data = {"entry_id": entry.entry_id, "status": "fail" if transient else "pass"}
        if transient:
            data["error_class"] = "transient"
        self.emit(ts.date(), {"id": self.next_id("ev"), "type": "memory.check", "ts": self.iso(ts), "namespace": ns,
                              "run_id": run, "agent_id": agent, "actor": "test", "data": data})

    def hostile(self, share: float) -> None:
        """Sprinkle malformed lines through the days (counted in the truth, never valid)."""
        rng = self.rng
        total = sum(len(v) for v in self.events_by_day.values())
        days = sorted(self.events_by_day)
        bad_kinds = [
            lambda: b'{"id": "bad-' + str(rng.randrange(10**9)).encode() + b'", "type": "memory.write", "ts": ',
            lambda: b"this is not json at all",
            lambda: orjson.dumps({"id": self.next_id("bad"), "type": "memory.teleport", "ts": "2026-01-01T00:00:00Z",
                                  "namespace": "fleet-000", "data": {}}),
            lambda: orjson.dumps({"id": self.next_id("bad"), "type": "memory.write", "ts": "2026-01-01T00:00:00Z",
                                  "namespace": "fleet-000", "data": {"text": 42, "class": "lesson"}}),
            lambda: orjson.dumps({"id": self.next_id("bad"), "type": "memory.write", "ts": "2026-01-01T00:00:00Z",
                                  "namespace": "../etc/passwd", "data": {"text": "x", "class": "lesson"}}),
            lambda: orjson.dumps({"id": self.next_id("bad"), "type": "memory.write", "ts": "2026-01-01T00:00:00Z",
                                  "namespace": "fleet-000", "data": {"text": "new value", "class": "config",
                                                                     "supersedes": "m000000001"}}),
            lambda: b'{"id": "bad-nul", "type": "run.start", "ts": "2026-01-01T00:00:00Z", "namespace": "a\x00b", "data": {}}',
            lambda: b"\xff\xfe broken bytes \xc3\x28",
        ]
        for _ in range(int(total * share)):
            day = rng.choice(days)
            self.events_by_day[day].append(rng.choice(bad_kinds)())
            self.truth.malformed_lines += 1

    def write_files(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for day in sorted(self.events_by_day):
            lines = self.events_by_day[day]
            self.rng.shuffle(lines)
            body = b"\n".join(lines) + b"\n"
            if day.toordinal() % 2:
                path = folder / f"{day.isoformat()}.jsonl.gz"
                path.write_bytes(gzip.compress(body, mtime=0))
            else:
                path = folder / f"{day.isoformat()}.jsonl"
                path.write_bytes(body)
            paths.append(path)
        return paths


def demo_folder(landing: Path, end: date, seed: int) -> Path:
    return landing / f"demo-{end.isoformat()}-s{seed}"


def generate(landing: Path, truth_dir: Path, writes: int = 50_000, namespaces: int = 8, days: int = 120,
             seed: int = 7, end: date | None = None, hostile_share: float = 0.003,
             progress: Callable[[int], None] | None = None) -> Truth:
    """Generate the fleet into ``landing``/demo-<end>-s<seed> and its ground truth into ``truth_dir``.

    Landed files are never rewritten: a fleet already landed for this end date and seed is left as
    it is; another end date or seed lands in its own folder with its own event ids.
    """
    end = end or (datetime.utcnow().date() - timedelta(days=1))
    fleet = _Fleet(seed, namespaces, end, days)
    fleet.id_prefix = f"d{end.strftime('%Y%m%d')}s{seed}-"
    fleet.generate(writes, progress)
    fleet.hostile(hostile_share)
    fleet.write_files(demo_folder(landing, end, seed))
    truth_dir.mkdir(parents=True, exist_ok=True)
    (truth_dir / "demo_truth.json").write_bytes(orjson.dumps(fleet.truth.__dict__, option=orjson.OPT_INDENT_2))
    return fleet.truth
