"""The compiled loops behind memcurator.minhash (numba, parallel over documents or pairs, cached on disk)."""

import numba
import numpy as np


@numba.njit(parallel=True, cache=True)
def min_hashes(codes, offsets, mixed, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over the document's tokens of (a[p] * h + b[p]) mod 2^32; one document per task.
    Written so the compiler vectorises the permutation loop (truncate, then an unconditional min: a
    64-bit mask and a conditional store kept it scalar, 7x slower)."""
    for d in numba.prange(offsets.shape[0] - 1):
        row = np.full(a.shape[0], np.uint32(0xFFFFFFFF), dtype=np.uint32)
        for t in range(offsets[d], offsets[d + 1]):
            h = mixed[codes[t]]
            for p in range(a.shape[0]):
                row[p] = min(row[p], np.uint32(a[p] * h + b[p]))
        out[d, :] = row


@numba.njit(parallel=True, cache=True)
def band_keys(sig, rows, out):  # pragma: no cover - compiled
    """FNV-style fold of each band's rows: key = (key * 0x100000001B3 ^ value) * 0x9E3779B97F4A7C15."""
    for d in numba.prange(sig.shape[0]):
        for band in range(out.shape[1]):
            key = np.uint64(0)
            for r in range(rows):
                key = (key * np.uint64(0x100000001B3)) ^ np.uint64(sig[d, band * rows + r])
                key = key * np.uint64(0x9E3779B97F4A7C15)
            out[d, band] = key


@numba.njit(parallel=True, cache=True)
def sort_rows(codes, offsets):  # pragma: no cover - compiled
    for r in numba.prange(offsets.shape[0] - 1):
        codes[offsets[r]:offsets[r + 1]].sort()


@numba.njit(parallel=True, cache=True)
def merge_jaccard(codes, offsets, a, b, out):  # pragma: no cover - compiled
    for i in numba.prange(a.shape[0]):
        x, x_end = offsets[a[i]], offsets[a[i] + 1]
        y, y_end = offsets[b[i]], offsets[b[i] + 1]
        size = (x_end - x) + (y_end - y)
        inter = 0
        while x < x_end and y < y_end:
            if codes[x] == codes[y]:
                inter += 1
                x += 1
                y += 1
            elif codes[x] < codes[y]:
                x += 1
            else:
                y += 1
        out[i] = inter / (size - inter)


@numba.njit(parallel=True, cache=True)
def band_bucket_pairs(keys, group):  # pragma: no cover - compiled
    """Pairs (i < j) of rows sharing a band key within the same group, for every band (repeats
    across bands kept). Each band's rows are sorted by one packed word: the high bits of the key mixed
    with the group, then the row number in the low bits (a value sort; an argsort was 5x slower).
    Within a run of equal high bits only rows with the very same key and group pair up, so a
    collision of the mix never pairs rows of different groups. Two passes over the runs: count, then fill."""
    n, bands = keys.shape
    bits = 1
    while (1 << bits) < n:
        bits += 1
    low = np.uint64((1 << bits) - 1)
    packed = np.empty((bands, n), dtype=np.uint64)
    counts = np.zeros(bands, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    for band in numba.prange(bands):
        for i in range(n):
            mixed = keys[i, band] ^ (np.uint64(group[i]) * np.uint64(0x9E3779B97F4A7C15))
            packed[band, i] = (mixed & ~low) | np.uint64(i)
        packed[band].sort()
        counts[band] = _run_pairs(packed[band], low, keys[:, band], group, none, none, 0)
    offsets = np.zeros(bands + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(counts)
    out_a = np.empty(offsets[bands], dtype=np.int64)
    out_b = np.empty(offsets[bands], dtype=np.int64)
    for band in numba.prange(bands):
        _run_pairs(packed[band], low, keys[:, band], group, out_a, out_b, offsets[band])
    return out_a, out_b


@numba.njit(cache=True)
def _run_pairs(packed, low, key, group, out_a, out_b, k):  # pragma: no cover - compiled
    """Counts the pairs of one band's sorted runs; writes them from out_a[k] on when out_a is not empty."""
    count = 0
    start = 0
    n = packed.shape[0]
    while start < n:
        end = start + 1
        while end < n and (packed[end] | low) == (packed[start] | low):
            end += 1
        for x in range(start, end):
            for y in range(x + 1, end):
                i, j = np.int64(packed[x] & low), np.int64(packed[y] & low)
                if key[i] == key[j] and group[i] == group[j]:
                    if out_a.shape[0]:
                        out_a[k + count] = min(i, j)
                        out_b[k + count] = max(i, j)
                    count += 1
        start = end
    return count
