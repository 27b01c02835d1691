"""The default contradiction judge on hand-made pairs (each case says which rule it exercises)."""

from __future__ import annotations

import polars as pl
import pytest

from memcurator.detect import features, judge
from tests.unit.test_text import HOSTILE


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


# texts at the edges of the compiled token scan's rules: each rewrite with and without its word boundaries,
# numbers with and without decimals, identifiers, values, antonyms, and texts the regex path reads
TOKEN_CASES = [
    "the cache isn't warmed", "I DON'T know", "can't", "n't", "5n't", "don'tx", "don't_", "won't.", "o'neill n'to",
    "no one came", "No One came", "_no one", "xno one", "no one_", "no one5", "no  one", "no ones", "no onen't",
    "no one's", "no longer used", "NO LONGER", "no longern't", "no longer_", "not longer", "no no one longer",
    "1.2.3 and 1. and .5 and 30.5s and 007", "v2.1.0 #1234 /var/log/app.log r123456 deadbeef01 build-930",
    "the timeout is true, enabled, not disabled; never full, always empty", "public private public",
    "ünïcode don't no one", "it’s curly: don’t", "nobody nothing none neither nor cannot without never",
]


def read(texts: list[str], use_compiled: bool) -> list[dict]:
    """features() by text, the word codes read as their words."""
    frame, words = features(pl.Series(texts), use_compiled=use_compiled)
    assert frame.schema["_c"] == frame.schema["_n"] == frame.schema["_ant"] == pl.List(pl.UInt32)
    words = words.to_list()
    return [{k: [words[c] for c in v] if k in ("_c", "_n", "_ant") else v for k, v in row.items()}
            for row in frame.sort("_text").to_dicts()]


@pytest.mark.parametrize("part_texts", [20_000, 8], ids=["one-part", "in-parts"])
def test_features_are_the_same_on_both_paths(part_texts, monkeypatch):
    from memcurator import text

    # in parts, the scan numbers the parts' vocabularies as one by reading each token again alone
    monkeypatch.setattr(text, "PART_TEXTS", part_texts)
    texts = [t for t in TOKEN_CASES + HOSTILE if t is not None]
    assert read(texts, use_compiled=True) == read(texts, use_compiled=False)


def test_features_read_the_rewrites():
    got = {r["_text"]: r for r in read(["I don't know", "no one came", "no longer used", "_no one came"], True)}
    assert got["I don't know"]["_neg"] == 1 and got["I don't know"]["_c"] == ["i", "know"]  # "do" is a stopword
    assert got["no one came"]["_neg"] == 1 and got["no one came"]["_c"] == ["noon", "came"]  # noone, stemmed
    assert got["no longer used"]["_neg"] == 1 and got["no longer used"]["_c"] == ["longer", "use"]
    assert got["_no one came"]["_neg"] == 1 and got["_no one came"]["_c"] == ["came"]  # no boundary: "no", "one"


@pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "polars"])
def test_evidence_names_the_words(use_compiled, monkeypatch):
    from memcurator import text

    monkeypatch.setattr(text, "compiled", lambda batch, choice=None: use_compiled)
    out = judge(pl.DataFrame({"text_a": ["the staging bucket is public", "the ledger timeout is 30 seconds"],
                              "text_b": ["the staging bucket is private", "the ledger timeout is 45 seconds"]}))
    assert out["evidence"].to_list() == [
        "opposite words (privat) in otherwise matching statements",
        "different values 30 vs 45 for the same statement (rest overlap 1.0)"]
