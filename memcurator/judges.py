"""Pluggable pair judges: classify a candidate pair as compatible, contradictory, subsumes,
subsumed or duplicate.

``HeuristicJudge`` (the default) wraps the lexical rules of ``memcurator.detect``. ``ChatJudge``
asks an OpenAI-compatible chat endpoint (e.g. a local Ollama at http://127.0.0.1:11434/v1) in
batches, with a timeout per request; any batch the endpoint cannot answer (down, slow, malformed
reply) is judged by the fallback instead, and each row says which judge decided it. Off by default:
set ``judge_endpoint`` in the curation configuration to use it; an endpoint that wants a key reads it from
the environment variable MEMCURATOR_JUDGE_API_KEY (sent as a bearer token), which no table, setting or
run configuration holds.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from memcurator.config import without_user_info
from memcurator.detect import judge as lexical_judge

LABELS = ("compatible", "contradictory", "subsumes", "subsumed", "duplicate")
API_KEY_VARIABLE = "MEMCURATOR_JUDGE_API_KEY"


class Judge(Protocol):
    def classify(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """Adds ``label`` (one of LABELS), ``confidence``, ``evidence`` and ``judge`` to (text_a, text_b) pairs."""


@dataclass
class HeuristicJudge:
    duplicate_overlap: float = 0.9

    def classify(self, pairs: pl.DataFrame) -> pl.DataFrame:
        judged = lexical_judge(pairs.select("text_a", "text_b"))
        label = (pl.when(judged["is_conflict"]).then(pl.lit("contradictory"))
                 .otherwise(pl.lit("compatible")))
        return pairs.with_columns(
            judged.select(label.alias("label"))["label"],
            judged["confidence"], judged["evidence"].fill_null("no conflict cue").alias("evidence"),
            pl.lit("heuristic").alias("judge"))


PROMPT = (
    "You compare notes from an AI agent's memory. For each numbered pair (A, B) answer with one label: "
    "compatible (both can be true), contradictory (both cannot be true), subsumes (A covers B), "
    "subsumed (B covers A), duplicate (same statement). Reply with JSON only: "
    '[{"i": <number>, "label": "<label>", "confidence": <0..1>}, ...]'
)


@dataclass
class ChatJudge:
    base_url: str
    model: str
    timeout: float = 10.0
    batch_size: int = 20
    api_key: str = ""
    fallback: Judge = field(default_factory=HeuristicJudge)

    def classify(self, pairs: pl.DataFrame) -> pl.DataFrame:
        parts = []
        for start in range(0, pairs.height, self.batch_size):
            batch = pairs.slice(start, self.batch_size)
            try:
                parts.append(self._ask(batch))
            except (urllib.error.URLError, TimeoutError, OSError, ValueError, KeyError) as exc:
                fallen = self.fallback.classify(batch)
                parts.append(fallen.with_columns(pl.lit(f"heuristic (fallback: {type(exc).__name__})").alias("judge")))
        if not parts:
            return pairs.with_columns(pl.lit(None, pl.String).alias("label"), pl.lit(None, pl.Float64).alias("confidence"),
                                      pl.lit(None, pl.String).alias("evidence"), pl.lit(None, pl.String).alias("judge"))
        return pl.concat(parts, how="diagonal_relaxed")

    def _ask(self, batch: pl.DataFrame) -> pl.DataFrame:
        listing = "\n".join(f"{i}. A: {a}\n   B: {b}" for i, (a, b) in
                            enumerate(zip(batch["text_a"], batch["text_b"]), start=1))
        body = json.dumps({"model": self.model, "temperature": 0,
                           "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": listing}]})
        # user info in the URL is not sent (urllib reads it as part of the host): the key is api_key
        parts = urllib.parse.urlsplit(without_user_info(self.base_url))
        url = urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))
        request = urllib.request.Request(url, data=body.encode(),
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            reply = json.loads(response.read())
        content = reply["choices"][0]["message"]["content"]
        answers = {int(a["i"]): a for a in json.loads(content[content.index("["): content.rindex("]") + 1])}
        labels, confidences = [], []
        for i in range(1, batch.height + 1):
            answer = answers[i]
            if answer["label"] not in LABELS:
                raise ValueError(f"unknown label {answer['label']!r}")
            labels.append(answer["label"])
            confidences.append(float(answer.get("confidence", 0.5)))
        return batch.with_columns(pl.Series("label", labels), pl.Series("confidence", confidences),
                                  pl.lit(f"judged by {self.model}").alias("evidence"),
                                  pl.lit(f"chat:{self.model}").alias("judge"))


def from_config(endpoint: str, model: str, timeout: float) -> Judge:
    """The chat judge at ``endpoint`` with the environment's key, or the heuristics without an endpoint."""
    return ChatJudge(endpoint, model, timeout, api_key=os.environ.get(API_KEY_VARIABLE, "")) if endpoint \
        else HeuristicJudge()
