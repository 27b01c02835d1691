"""MinHash signatures and LSH banding, vectorised (datasketch 2.0's ``affine32`` scheme).

Each distinct shingle is hashed once (sha1, first 4 bytes little-endian, as datasketch's
``sha1_hash32``), pre-mixed with the MurmurHash3 finalizer and permuted by ``a*h + b mod 2^32``
with datasketch's seeded ``a``/``b``: the signatures equal ``datasketch.MinHash(num_perm, seed=1)``
fed the same shingles, bit for bit (tests/unit/test_minhash.py). The per-document minima, the band
keys, the LSH buckets and the exact Jaccard of candidates are numba-compiled loops on all cores
(memcurator/kernels.py): no (tokens x num_perm) intermediate, and the signatures take about a tenth
of the numpy ``minimum.reduceat`` they replace (4.2 s -> 0.4 s on 200k entries of 60 words).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from memcurator import text

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


@dataclass(frozen=True)
class TokenRows:
    """Lists of tokens in CSR form, what the compiled loops read: row r holds the codes
    ``codes[offsets[r]:offsets[r + 1]]``; ``vocabulary[code]`` is the token a code stands for."""
    codes: np.ndarray
    offsets: np.ndarray
    vocabulary: pl.Series

    def __len__(self) -> int:
        return len(self.offsets) - 1


def token_rows(lists: pl.Series, vocabulary: pl.Series | None = None) -> TokenRows:
    """Lists of tokens as CSR rows: lists of strings are numbered here; lists of codes (List[UInt32], from
    memcurator.text.shingle_codes) are taken as they are, with the ``vocabulary`` they were numbered by."""
    if lists.dtype == pl.List(pl.String):
        numbered = text.number_lists(lists)
        lists, vocabulary = numbered.lists, numbered.vocabulary
    if vocabulary is None:
        raise ValueError("lists of codes need the vocabulary they were numbered by")
    return TokenRows(lists.explode().drop_nulls().to_numpy().astype(np.int64), text.list_offsets(lists), vocabulary)


def signatures(shingles: pl.Series | TokenRows, num_perm: int = 128, seed: int = 1,
               use_compiled: bool | None = None) -> np.ndarray:
    """(n_docs, num_perm) uint32 signatures; a document without shingles gets the all-max signature."""
    rows = shingles if isinstance(shingles, TokenRows) else token_rows(shingles)
    sig = np.empty((len(rows), num_perm), dtype=np.uint32)
    # each distinct shingle of these rows hashed once: the kernel looks its hash up by code
    used = np.zeros(len(rows.vocabulary), dtype=bool)
    used[rows.codes] = True
    mixed = np.zeros(len(rows.vocabulary), dtype=np.uint32)
    mixed[used] = _fmix32(hash_tokens(rows.vocabulary.filter(pl.Series(used)).to_list()))
    a, b = permutations(num_perm, seed)
    if text.compiled(len(rows), use_compiled):
        text.compiled_loops().min_hashes(rows.codes, rows.offsets, mixed, a, b, sig)
    else:
        _min_hashes(rows.codes, rows.offsets, mixed, a, b, sig)
    return sig


BLOCK_TOKENS = 1 << 14  # tokens whose permuted hashes numpy holds at once (8 MB at 128 permutations)


def _min_hashes(codes: np.ndarray, offsets: np.ndarray, mixed: np.ndarray, a: np.ndarray, b: np.ndarray,
                out: np.ndarray) -> None:
    """kernels.min_hashes in numpy: the permuted hashes of a block of whole documents' tokens (uint32
    arithmetic wraps mod 2^32 as the kernel's truncation does), each document's minimum by reduceat
    along the tokens (one row per permutation: reduced along the other axis it took 3-7x as long)."""
    out[:] = np.uint32(0xFFFFFFFF)
    n, start = len(offsets) - 1, 0
    while start < n:
        # the documents whose tokens end within BLOCK_TOKENS of this one's first (one at least)
        end = min(max(int(np.searchsorted(offsets, offsets[start] + BLOCK_TOKENS, side="right")) - 1, start + 1), n)
        first, present = offsets[start], np.diff(offsets[start:end + 1]) > 0
        if present.any():
            permuted = a[:, None] * mixed[codes[first:offsets[end]]][None, :] + b[:, None]
            out[start:end][present] = np.minimum.reduceat(permuted, (offsets[start:end] - first)[present], axis=1).T
        start = end


def band_keys(sig: np.ndarray, bands: int, use_compiled: bool | None = None) -> np.ndarray:
    """(n_docs, bands) uint64 keys, one per band of ``rows = num_perm / bands`` values."""
    n, num_perm = sig.shape
    if num_perm % bands:
        raise ValueError(f"bands ({bands}) must divide the number of permutations ({num_perm})")
    key = np.empty((n, bands), dtype=np.uint64)
    if text.compiled(n, use_compiled):
        text.compiled_loops().band_keys(sig, num_perm // bands, key)
        return key
    # kernels.band_keys over all documents and bands at once (uint64 arithmetic wraps as the kernel's)
    values = sig.reshape(n, bands, num_perm // bands).astype(np.uint64)
    key[:] = 0
    for r in range(values.shape[2]):
        key = ((key * np.uint64(0x100000001B3)) ^ values[:, :, r]) * np.uint64(0x9E3779B97F4A7C15)
    return key


def jaccard_of_pairs(codes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
                     use_compiled: bool | None = None) -> np.ndarray:
    """Exact Jaccard of row pairs (a[i], b[i]) of a CSR token matrix: row r holds the distinct token codes
    ``codes[offsets[r]:offsets[r + 1]]``. Compiled: one row's codes marked in a table, the other's counted
    against it; a small batch intersects the pairs' lists in polars instead."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    if not text.compiled(len(a), use_compiled):
        lists = pl.Series(pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(codes, pa.int64())))
        shared = (pl.DataFrame({"x": lists.gather(a), "y": lists.gather(b)})
                  .select(pl.col("x").list.set_intersection("y").list.len())
                  .to_series().to_numpy().astype(np.int64))
        size = (offsets[a + 1] - offsets[a]) + (offsets[b + 1] - offsets[b])
        return shared / (size - shared)
    out = np.empty(len(a), dtype=np.float64)
    kernels = text.compiled_loops()
    kernels.stamped_jaccard(codes, offsets, a, b, int(codes.max()) + 1 if len(codes) else 0,
                            max(1, min(len(a), kernels.numba.get_num_threads())), out)
    return out


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    """Chance that two sets of this Jaccard similarity share at least one band: 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def lsh_candidates(keys: np.ndarray, group: np.ndarray) -> pl.DataFrame:
    """Pairs (a < b) sharing a band key within the same group (namespace); duplicates removed. The rows
    are taken group by group (a caller's rows usually come so already)."""
    group = np.asarray(group)
    if len(group) < 2:
        return pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64})
    order = None if np.all(group[1:] >= group[:-1]) else np.argsort(group, kind="stable")
    if order is not None:
        keys, group = keys[order], group[order]
    starts = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1], [True]])).astype(np.int64)
    a, b = text.compiled_loops().band_bucket_pairs(np.ascontiguousarray(keys, dtype=np.uint64), starts)
    if order is not None:  # rows in the caller's numbering (a stable order keeps a < b within a group)
        a, b = order[a], order[b]
    # each pair as one 64-bit word (a in the high half): one column to sort and de-duplicate, not two
    # (1M pairs, 200k of them distinct: 0.09 -> 0.035 s)
    assert len(group) < 1 << 32, "row numbers fit in 32 bits"
    words = pl.Series((a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)).unique().sort().to_numpy()
    return pl.DataFrame({"a": (words >> np.uint64(32)).astype(np.int64),
                         "b": (words & np.uint64(0xFFFFFFFF)).astype(np.int64)})
