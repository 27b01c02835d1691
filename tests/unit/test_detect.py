"""The default contradiction judge on hand-made pairs (each case says which rule it exercises)."""

from __future__ import annotations

import polars as pl
import pytest

from memcurator.detect import judge


@pytest.mark.parametrize(
    "a, b, kind",
    [
        # negation over the same content
        ("A man is playing the flute", "There is no man playing the flute", "negation"),
        ("the cache is warmed on start", "the cache isn't warmed on start", "negation"),
        # different values of the same attribute
        ("the ledger timeout is 30 seconds", "the ledger timeout is 45 seconds", "value"),
        ("feature flag fast-path is enabled", "feature flag fast-path is disabled", "antonym"),
        # opposite words in otherwise matching statements
        ("the staging bucket is public", "the staging bucket is private", "antonym"),
        # change markers
        ("use kustomize for the ledger deploys", "the ledger deploys no longer use kustomize", "negation"),
        ("we deploy the ledger with helm charts", "we deploy the ledger with kustomize instead of helm charts", "change"),
        # compatible statements: no conflict
        ("A man is playing the flute", "A man is playing a flute on stage", None),
        ("always pin the client version", "pin the client version before upgrading", None),
        # the same numbers, different wording: no conflict
        ("the ledger timeout is 30 seconds", "ledger timeout: 30 seconds", None),
        # different identifiers: different events, not competing values
        ("run r123456 took 30 minutes", "run r654321 took 45 minutes", None),
        # negation about something else entirely
        ("there is no milk in the fridge", "the deploy finished on time", None),
    ],
)
def test_judge(a, b, kind):
    out = judge(pl.DataFrame({"text_a": [a], "text_b": [b]}))
    assert out["kind"][0] == kind
    assert out["is_conflict"][0] == (kind is not None)
    if kind:
        assert out["evidence"][0] and 0 < out["confidence"][0] <= 1


def test_judge_is_symmetric():
    pairs = pl.DataFrame({"text_a": ["the ledger timeout is 30 seconds", "a dog is running"],
                          "text_b": ["the ledger timeout is 45 seconds", "no dog is running"]})
    swapped = pairs.select(pl.col("text_b").alias("text_a"), pl.col("text_a").alias("text_b"))
    assert judge(pairs)["kind"].to_list() == judge(swapped)["kind"].to_list()


def test_empty_input():
    assert judge(pl.DataFrame({"text_a": [], "text_b": []}, schema={"text_a": pl.String, "text_b": pl.String})).height == 0
