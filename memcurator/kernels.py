"""The compiled loops behind memcurator.minhash (numba, parallel over documents or pairs, cached on disk)."""

import numba
import numpy as np


@numba.njit(parallel=True, cache=True)
def min_hashes(codes, offsets, mixed, a, b, out):  # pragma: no cover - compiled
    """out[d, p] = min over the document's tokens of (a[p] * h + b[p]) mod 2^32; one document per task."""
    for d in numba.prange(offsets.shape[0] - 1):
        row = np.full(a.shape[0], np.uint32(0xFFFFFFFF), dtype=np.uint32)
        for t in range(offsets[d], offsets[d + 1]):
            h = np.uint64(mixed[codes[t]])
            for p in range(a.shape[0]):
                v = np.uint32((np.uint64(a[p]) * h + np.uint64(b[p])) & np.uint64(0xFFFFFFFF))
                if v < row[p]:
                    row[p] = v
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
