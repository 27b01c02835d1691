"""The curation knobs, in one place.

``CurationConfig`` is a plain frozen dataclass so the library stays Dagster-free; the Dagster
resource in ``pipelines/resources.py`` mirrors its fields so they show (and can be overridden per
run) in the UI. Every default here is either a safe limit or a value measured by ``make eval``.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit


class SettingsError(ValueError):
    """Settings the night cannot use: the message names the setting (and the file it came from)."""


# (name, lowest, highest or None): the ranges in which a setting means what its rule says
_RANGES = (
    *((name, 1, None) for name in ("max_line_bytes", "max_file_bytes", "max_text_chars", "max_json_depth",
                                   "minhash_permutations", "lsh_bands", "shingle_words", "near_duplicate_chunk_entries",
                                   "judge_pass_pairs")),
    *((name, 0, None) for name in ("quarantine_raw_chars", "max_idle_days", "reverify_after_days", "operational_ttl_days",
                                   "case_max_age_days", "case_max_count", "w_generality", "proven_cap",
                                   "recent_boost_days", "recent_boost", "warm_boost_days", "warm_boost",
                                   "trust_guard_ratio")),
    *((name, 0, 1) for name in ("noise_floor", "trust_review_threshold", "case_min_trust", "redundancy_penalty",
                                "near_duplicate_rate_limit", "incremental_max_changed_share")),
    ("min_generality", 0, 3),
    ("min_principle_members", 2, None),
)


@dataclass(frozen=True)
class CurationConfig:
    # ingest limits: a line or file above them is quarantined, never parsed
    max_line_bytes: int = 1_000_000
    max_file_bytes: int = 2_000_000_000
    max_text_chars: int = 20_000
    max_json_depth: int = 32
    quarantine_raw_chars: int = 2_000
    earliest_timestamp: str = "1990-01-01"
    latest_timestamp: str = "2100-01-01"

    # lifecycle
    max_idle_days: int = 30
    min_generality: float = 1.0
    reverify_after_days: int = 90
    operational_ttl_days: int = 7
    noise_floor: float = 0.25
    trust_review_threshold: float = 0.5
    case_max_age_days: int = 90
    case_min_trust: float = 0.3
    case_max_count: int = 1000

    # ranking: score = generality * w_generality + min(proven, proven_cap) + recency boost
    w_generality: float = 2.0
    proven_cap: int = 10
    recent_boost_days: int = 7
    recent_boost: float = 3.0
    warm_boost_days: int = 30
    warm_boost: float = 1.0

    # compression
    minhash_permutations: int = 128
    lsh_bands: int = 32
    shingle_words: int = 1
    shingle_drop_stopwords: bool = True
    near_duplicate_threshold: float = 0.6
    min_principle_members: int = 3
    redundancy_penalty: float = 0.12
    near_duplicate_rate_limit: float = 0.06
    near_duplicate_chunk_entries: int = 200_000  # whole namespaces per pass: memory stays flat as entries grow
    incremental_max_changed_share: float = 0.5  # above it the near-duplicate stage recomputes everything

    # contradictions
    trust_guard_ratio: float = 0.8
    judge_endpoint: str = ""          # an OpenAI-compatible base URL enables the chat judge (off by default);
                                      # its key is the environment's MEMCURATOR_JUDGE_API_KEY, never a setting
    judge_model: str = "llama3.1"
    judge_timeout_seconds: float = 10.0
    judge_pass_pairs: int = 100_000   # whole namespaces per pass of the rules judge: memory stays flat

    def __post_init__(self) -> None:
        """A setting out of its range stops here, named (``SettingsError``): a night with zero bands,
        shares above one or a limit below zero ran on and gave tables that mean nothing, or stopped deep
        in a stage with a division by zero."""
        for name, low, high in _RANGES:
            value = getattr(self, name)
            if value < low or (high is not None and value > high):
                bounds = f"at least {low}" if high is None else f"from {low} to {high}"
                raise SettingsError(f"{name} must be {bounds}, not {value!r}")
        if not 0 < self.near_duplicate_threshold <= 1:
            raise SettingsError(f"near_duplicate_threshold must be above 0 and at most 1, not {self.near_duplicate_threshold!r}")
        if self.judge_timeout_seconds <= 0:
            raise SettingsError(f"judge_timeout_seconds must be above 0, not {self.judge_timeout_seconds!r}")
        if self.minhash_permutations % self.lsh_bands:
            raise SettingsError(f"lsh_bands ({self.lsh_bands}) must divide minhash_permutations "
                                f"({self.minhash_permutations})")
        try:
            earliest, latest = (datetime.fromisoformat(v) for v in (self.earliest_timestamp, self.latest_timestamp))
        except ValueError:
            raise SettingsError(f"earliest_timestamp and latest_timestamp must be dates (YYYY-MM-DD), not "
                                f"{self.earliest_timestamp!r} and {self.latest_timestamp!r}") from None
        if earliest >= latest:
            raise SettingsError(f"earliest_timestamp ({self.earliest_timestamp}) must come before latest_timestamp "
                                f"({self.latest_timestamp})")
        if self.judge_endpoint and (urlsplit(self.judge_endpoint).scheme not in ("http", "https")
                                    or not urlsplit(self.judge_endpoint).netloc):
            raise SettingsError(f"judge_endpoint must be empty (no chat judge) or an http(s) URL, not "
                                f"{public_endpoint(self.judge_endpoint)!r}")

    @classmethod
    def from_mapping(cls, values: dict) -> "CurationConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})

    @classmethod
    def from_recorded(cls, values: dict, known: "CurationConfig | None" = None) -> "CurationConfig":
        """The settings a night recorded (``recorded``: core.audit_settings, a sharded night's split), with
        the judge's endpoint whole again. The record masks a query's values, so the endpoint is taken from
        ``known`` (the settings at hand: the home's, a shard worker's) when its public form is the one
        recorded; raises SettingsError when the record masked values ``known`` cannot give back: the
        judge would be asked at another URL than its own."""
        endpoint = values.get("judge_endpoint") or ""
        if known is not None and known.judge_endpoint and public_endpoint(known.judge_endpoint) == endpoint:
            values = values | {"judge_endpoint": known.judge_endpoint}
        elif masks_endpoint(values):
            raise SettingsError(
                f"the night ran with the chat judge at {endpoint!r}, whose query values the store does not keep: "
                "give the endpoint in the home's settings.toml (judge_endpoint), or put the judge's key in "
                "MEMCURATOR_JUDGE_API_KEY instead of the URL")
        return cls.from_mapping(values)

    def as_dict(self) -> dict:
        return asdict(self)

    def recorded(self) -> dict:
        """The settings as a night records them (core.audit_settings): the judge's endpoint as
        ``public_endpoint`` shows it."""
        return asdict(replace(self, judge_endpoint=public_endpoint(self.judge_endpoint)))


def read_settings(path: Path) -> dict:
    """The curation settings a home's ``settings.toml`` gives (``NAME = VALUE`` lines, each NAME a field of
    ``CurationConfig``, each VALUE of that field's type; an integer does for a decimal); none without
    the file. Raises ``SettingsError`` for a file that is no TOML, an unknown name, a value of another
    type or out of its range: a night never runs with settings other than those written."""
    if not path.exists():
        return {}
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise SettingsError(f"{path}: not a TOML file ({error})") from None
    except OSError as error:
        raise SettingsError(f"{path}: cannot be read ({error.strerror or error})") from None
    defaults = CurationConfig().as_dict()
    settings = {}
    for name, value in values.items():
        if name not in defaults:
            raise SettingsError(f"{path}: {name} is no curation setting (the settings are the fields of "
                                "memcurator/config.py's CurationConfig)")
        kind = type(defaults[name])
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not kind:
            raise SettingsError(f"{path}: {name} takes {_KIND_NAMES[kind]}, not {value!r}")
        settings[name] = value
    try:
        CurationConfig(**settings)
    except SettingsError as error:
        raise SettingsError(f"{path}: {error}") from None
    return settings


_KIND_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "text in quotes"}

_SWITCH = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def switch(value: str) -> bool:
    """A yes/no value as a setting or an environment variable gives it: 1/0, true/false, yes/no or on/off
    in any case; anything else is a ValueError, never read as no."""
    key = value.strip().lower()
    if key not in _SWITCH:
        raise ValueError(f"{value!r}: expected 1 or 0 (true/false, yes/no, on/off)")
    return _SWITCH[key]


MASKED = "***"  # a query value as public_endpoint shows it


def masks_endpoint(recorded: dict) -> bool:
    """Whether settings as a night records them hold a judge endpoint whose query values are masked: only
    then are settings at hand needed to ask the judge (CurationConfig.from_recorded)."""
    query = urlsplit(recorded.get("judge_endpoint") or "").query
    return any(value == MASKED for _, value in parse_qsl(query, keep_blank_values=True))


def public_endpoint(url: str) -> str:
    """``url`` as the store may hold it: without a user name or password, and with the query's values
    masked (a key written into the URL stays out of the tables; the judge's key is an environment
    variable). The judge asks ``url`` itself, but for the user info (judges.ChatJudge)."""
    if not url:
        return url
    parts = urlsplit(without_user_info(url))
    query = "&".join(f"{name}={MASKED}" for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def without_user_info(url: str) -> str:
    """``url`` without the user name and password before its host."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
