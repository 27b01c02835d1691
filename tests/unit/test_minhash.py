"""MinHash and banding: equal to datasketch, and the banding probabilities as designed."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash

from memcurator import minhash
from memcurator.text import jaccard, shingle_column

TEXTS = [
    "always run the database migrations before deploying the ledger service",
    "Always run the DB migrations before deploying the ledger service!",
    "prefer idempotent operations",
    "",
    "ünïcode wörds and ascii words",
]


# The compiled loops and the numpy code a small batch takes (memcurator.text.compiled) give the same numbers.
PATHS = pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "numpy"])


@PATHS
@pytest.mark.parametrize("num_perm", [16, 128])
def test_signatures_equal_datasketch_bit_for_bit(num_perm, use_compiled):
    shingles = shingle_column(pl.Series(TEXTS), 1)
    ours = minhash.signatures(shingles, num_perm=num_perm, use_compiled=use_compiled)
    for row, tokens in zip(ours, shingles.to_list()):
        reference = MinHash(num_perm=num_perm, seed=1)
        for t in tokens:
            reference.update(t.encode("utf-8"))
        assert np.array_equal(row, reference.hashvalues.astype(np.uint32))


@PATHS
def test_many_documents_equal_datasketch(use_compiled, monkeypatch):
    # hundreds of documents of varied length, empty ones among them (the first and the last too): every
    # row computed in parallel, or in numpy in blocks of a few documents
    monkeypatch.setattr(minhash, "BLOCK_TOKENS", 97)
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(500)]
    docs = [sorted(set(rng.choice(words, int(k)))) if k else [] for k in rng.integers(0, 40, 300)]
    docs[0] = docs[-1] = docs[150] = []
    ours = minhash.signatures(pl.Series(docs, dtype=pl.List(pl.String)), num_perm=64, use_compiled=use_compiled)
    for row, tokens in zip(ours, docs):
        reference = MinHash(num_perm=64, seed=1)
        for t in tokens:
            reference.update(t.encode("utf-8"))
        assert np.array_equal(row, reference.hashvalues.astype(np.uint32))


@PATHS
def test_band_keys_fold_each_band_of_rows(use_compiled):
    sig = np.random.default_rng(3).integers(0, 1 << 32, (5, 8), dtype=np.uint64).astype(np.uint32)
    keys = minhash.band_keys(sig, 2, use_compiled)
    mask = (1 << 64) - 1
    for d in range(5):
        for band in range(2):
            key = 0
            for value in sig[d, band * 4:(band + 1) * 4]:
                key = (((key * 0x100000001B3) & mask) ^ int(value)) * 0x9E3779B97F4A7C15 & mask
            assert int(keys[d, band]) == key
    with pytest.raises(ValueError, match="must divide"):
        minhash.band_keys(sig, 3, use_compiled)


@pytest.mark.parametrize(
    "words, text, expected",
    [
        (1, "A b, a!", ["a", "b"]),  # case and punctuation folded, duplicates dropped
        (2, "a b c", ["a b", "b c"]),  # word bigrams
        (2, "solo", ["solo"]),  # shorter than n: the whole text is one shingle
        (1, "", []),  # empty text: no shingles (and an all-max signature)
    ],
)
def test_shingles(words, text, expected):
    assert shingle_column(pl.Series([text]), words).to_list() == [expected]


def test_banding_probability_for_the_default_setting():
    # 32 bands x 4 rows finds ~99 % of pairs at Jaccard 0.6; datasketch's 18 x 7 finds ~40 %
    assert minhash.candidate_probability(0.6, 32, 4) > 0.98
    assert minhash.candidate_probability(0.6, 18, 7) < 0.45
    assert minhash.candidate_probability(0.2, 32, 4) < 0.06


def test_estimated_similarity_tracks_exact_jaccard():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(200)]
    base = set(rng.choice(words, 40, replace=False))
    others = [set(list(base)[:k]) | set(rng.choice(words, 40 - k, replace=False)) for k in range(0, 41, 5)]
    shingles = pl.Series([sorted(base)] + [sorted(o) for o in others])
    sig = minhash.signatures(shingles, num_perm=256)
    for i, other in enumerate(others, start=1):
        estimate = float(np.mean(sig[0] == sig[i]))
        assert abs(estimate - jaccard(base, other)) < 0.12


def test_candidates_stay_inside_their_group():
    shingles = shingle_column(pl.Series(["same words here"] * 4), 1)
    keys = minhash.band_keys(minhash.signatures(shingles), 32)
    pairs = minhash.lsh_candidates(keys, np.array([0, 0, 1, 1]))
    assert pairs.rows() == [(0, 1), (2, 3)]


@PATHS
def test_verify_gives_exact_jaccard_and_drops_docs_without_shingles(use_compiled, monkeypatch):
    from memcurator import text
    from memcurator.clustering import verify

    monkeypatch.setattr(text, "compiled", lambda batch, choice=None: use_compiled)

    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(60)]
    docs = [sorted(set(rng.choice(words, int(k)))) if k else [] for k in rng.integers(0, 25, 80)]
    shingles = pl.DataFrame({"doc": np.arange(80, dtype=np.int64) * 10,
                             "shingles": pl.Series(docs, dtype=pl.List(pl.String))})
    pairs = pl.DataFrame({"a": rng.integers(0, 80, 400) * 10, "b": rng.integers(0, 80, 400) * 10})
    got = {(a, b): s for a, b, s in verify(pairs, shingles).rows()}
    expected = {(a, b): jaccard(set(docs[a // 10]), set(docs[b // 10])) for a, b in pairs.rows()
                if docs[a // 10] and docs[b // 10]}
    assert got == expected


def test_candidates_are_every_pair_sharing_a_band_key_in_its_group():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 6, (300, 4)).astype(np.uint64)  # few distinct keys: big, overlapping buckets
    group = rng.integers(0, 3, 300)
    expected = sorted({(i, j) for i in range(300) for j in range(i + 1, 300)
                       if group[i] == group[j] and (keys[i] == keys[j]).any()})
    assert minhash.lsh_candidates(keys, group).rows() == expected
