"""MinHash signatures and LSH banding, vectorised (datasketch 2.0's ``affine32`` scheme).

Each distinct shingle is hashed once (sha1, first 4 bytes little-endian, as datasketch's
``sha1_hash32``), pre-mixed with the MurmurHash3 finalizer and permuted by ``a*h + b mod 2^32``
with datasketch's seeded ``a``/``b``: the signatures equal ``datasketch.MinHash(num_perm, seed=1)``
fed the same shingles, bit for bit (tests/unit/test_minhash.py). The per-document minimum is a
``np.minimum.reduceat`` over cache-sized token blocks, so memory stays flat.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import polars as pl

MAX32 = np.uint64(0xFFFFFFFF)


def permutations(num_perm: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def hash_tokens(vocabulary: list[str]) -> np.ndarray:
    """sha1_hash32 of each distinct shingle (once per vocabulary entry, not per occurrence)."""
    return np.fromiter((struct.unpack("<I", hashlib.sha1(t.encode("utf-8")).digest()[:4])[0] for t in vocabulary),
                       dtype=np.uint32, count=len(vocabulary))


def signatures(shingles: pl.Series, num_perm: int = 128, seed: int = 1, chunk_tokens: int = 16_000) -> np.ndarray:
    """(n_docs, num_perm) uint32 signatures; a document without shingles gets the all-max signature."""
    n = len(shingles)
    sig = np.full((n, num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    lengths = shingles.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = shingles.explode().drop_nulls()
    if flat.len() == 0:
        return sig
    vocab = flat.unique().sort()
    codes = (flat.to_frame("t")
             .join(vocab.to_frame("t").with_row_index("code"), on="t", how="left", maintain_order="left")
             ["code"].to_numpy())
    vocab = vocab.to_list()
    a, b = permutations(num_perm, seed)
    mixed = _fmix32(hash_tokens(vocab))
    # with np.errstate: uint32 wraparound is the intended modulo 2^32
    with np.errstate(over="ignore"):
        permuted = (mixed[:, None] * a[None, :] + b[None, :]).astype(np.uint32)
    docs = np.flatnonzero(lengths > 0)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths[docs])])
    codes = codes.astype(np.int64)
    # chunks of documents holding about chunk_tokens tokens: a (tokens x num_perm) block that stays in
    # cache makes the whole pass ~4x faster than 2M-token blocks (13.8 s -> 2.9 s on 100k entries)
    start = 0
    while start < len(docs):
        end = int(np.searchsorted(offsets, offsets[start] + chunk_tokens, side="right")) - 1
        end = max(end, start + 1)
        lo, hi = offsets[start], offsets[end]
        sig[docs[start:end]] = np.minimum.reduceat(permuted[codes[lo:hi]], offsets[start:end] - lo, axis=0)
        start = end
    return sig


def band_keys(sig: np.ndarray, bands: int) -> np.ndarray:
    """(n_docs, bands) uint64 keys, one per band of ``rows = num_perm / bands`` values."""
    n, num_perm = sig.shape
    if num_perm % bands:
        raise ValueError(f"bands ({bands}) must divide the number of permutations ({num_perm})")
    rows = num_perm // bands
    grouped = sig.reshape(n, bands, rows).astype(np.uint64)
    key = np.zeros((n, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for r in range(rows):
            key = (key * np.uint64(0x100000001B3)) ^ grouped[:, :, r]
            key = key * np.uint64(0x9E3779B97F4A7C15)
    return key


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """Chance that two sets of this Jaccard similarity share at least one band: 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def lsh_candidates(keys: np.ndarray, group: np.ndarray) -> pl.DataFrame:
    """Pairs (a < b) sharing a band key within the same group (namespace); duplicates removed."""
    n, bands = keys.shape
    frame = pl.DataFrame({
        "doc": np.repeat(np.arange(n, dtype=np.int64), bands),
        "band": np.tile(np.arange(bands, dtype=np.int16), n),
        "key": keys.reshape(-1),
        "group": np.repeat(group.astype(np.int64), bands),
    })
    buckets = frame.group_by("group", "band", "key").agg(pl.col("doc")).filter(pl.col("doc").list.len() > 1)
    if buckets.height == 0:
        return pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64})
    members = buckets.with_row_index("bucket").explode("doc").select("bucket", "doc")
    pairs = (members.join(members, on="bucket", suffix="_b")
             .filter(pl.col("doc") < pl.col("doc_b"))
             .select(pl.col("doc").alias("a"), pl.col("doc_b").alias("b"))
             .unique())
    return pairs.sort("a", "b")

