"""The compiled loops behind memcurator.minhash and memcurator.text's word codes (numba, cached on disk;
parallel over documents or pairs where the work splits)."""

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
def row_sums(values, codes, offsets, out):  # pragma: no cover - compiled
    """out[r] = the (wrapping) sum of values[c] over the codes c of CSR row r."""
    for r in numba.prange(offsets.shape[0] - 1):
        total = np.uint64(0)
        for t in range(offsets[r], offsets[r + 1]):
            total += values[codes[t]]
        out[r] = total


@numba.njit(parallel=True, cache=True)
def stamped_jaccard(codes, offsets, a, b, vocabulary, chunks, out):  # pragma: no cover - compiled
    """out[i] = Jaccard of CSR rows a[i] and b[i] (each row's codes distinct, below ``vocabulary``): row
    a[i]'s codes are stamped with the pair's number in a table as long as the vocabulary, then row
    b[i]'s codes counted where the stamp is the pair's. No sorting, and the table stays in cache (the
    rows sorted, then merged, took 0.25 s for 200k pairs; this 0.05 s). The pairs go in one chunk per
    thread (``chunks``), each with its own table."""
    for chunk in numba.prange(chunks):
        lo, hi = a.shape[0] * chunk // chunks, a.shape[0] * (chunk + 1) // chunks
        stamp = np.zeros(vocabulary, dtype=np.int64)
        for i in range(lo, hi):
            mark = i + 1
            for t in range(offsets[a[i]], offsets[a[i] + 1]):
                stamp[codes[t]] = mark
            inter = 0
            for t in range(offsets[b[i]], offsets[b[i] + 1]):
                if stamp[codes[t]] == mark:
                    inter += 1
            size = (offsets[a[i] + 1] - offsets[a[i]]) + (offsets[b[i] + 1] - offsets[b[i]])
            out[i] = inter / (size - inter)


@numba.njit(parallel=True, cache=True)
def band_bucket_pairs(keys, starts):  # pragma: no cover - compiled
    """Pairs (i < j) of rows sharing a band key within the same segment (rows starts[s]..starts[s+1]-1),
    for every band (repeats across bands kept). One task per (segment, band), which buckets the
    segment's keys of that band in a small hash table: a namespace's hundred-odd rows stay in cache
    (sorting each band's whole column, then runs of equal keys, took 0.33 s on 200k entries; sorting
    each segment's keys 0.18 s). Two passes: count the pairs, then write them."""
    n, bands = keys.shape
    tasks = (starts.shape[0] - 1) * bands
    counts = np.zeros(tasks, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    for task in numba.prange(tasks):
        lo, hi, band = starts[task // bands], starts[task // bands + 1], task % bands
        counts[task] = _bucket_pairs(keys[lo:hi, band], lo, none, none, 0)
    offsets = np.zeros(tasks + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(counts)
    out_a = np.empty(offsets[-1], dtype=np.int64)
    out_b = np.empty(offsets[-1], dtype=np.int64)
    for task in numba.prange(tasks):
        lo, hi, band = starts[task // bands], starts[task // bands + 1], task % bands
        _bucket_pairs(keys[lo:hi, band], lo, out_a, out_b, offsets[task])
    return out_a, out_b


@numba.njit(cache=True)
def _bucket_pairs(key, first, out_a, out_b, k):  # pragma: no cover - compiled
    """Counts the pairs (i < j) with key[i] == key[j]; writes them (as rows ``first + i``) from out_a[k] on
    when out_a is not empty. Open addressing on the mixed key; each row links to the previous row of its
    key, so a row pairs with exactly the rows of its key before it."""
    m = key.shape[0]
    bits = 1
    while (1 << bits) < 2 * m:
        bits += 1
    mask = (1 << bits) - 1
    head = np.full(1 << bits, -1, dtype=np.int64)
    previous = np.empty(m, dtype=np.int64)
    count = 0
    for i in range(m):
        slot = np.int64(_mix(key[i]) >> np.uint64(64 - bits))
        while head[slot] >= 0 and key[head[slot]] != key[i]:
            slot = (slot + 1) & mask
        previous[i] = head[slot]
        head[slot] = i
        j = previous[i]
        while j >= 0:
            if out_a.shape[0]:
                out_a[k + count] = first + j
                out_b[k + count] = first + i
            count += 1
            j = previous[j]
    return count


def _word_folds() -> np.ndarray:
    """Per byte: its lower case if it is an ASCII ``\\w`` character (letters, digits, the underscore), else 0.
    One table read per byte where two range tests and a case test were (the scan: 1.0 -> 0.7 s on 200k texts)."""
    fold = np.zeros(256, dtype=np.uint8)
    for byte in range(256):
        if 48 <= byte <= 57 or 97 <= byte <= 122 or byte == 95:
            fold[byte] = byte
        elif 65 <= byte <= 90:
            fold[byte] = byte + 32
    return fold


FOLD = _word_folds()  # a global array: numba compiles it in as a constant


@numba.njit(cache=True, nogil=True)
def ascii_word_codes(data, offsets, stop_data, stop_offsets):  # pragma: no cover - compiled
    """The distinct lower-cased ASCII words of each text, in first-seen order, as codes into one vocabulary.

    ``data``/``offsets``: the texts' UTF-8 bytes (Arrow layout). A text with any non-ASCII byte is left
    empty and flagged (``ascii[d] = False``): its words are Unicode's, read by the regex path. Words of
    ``stop_data``/``stop_offsets`` (lower-case) are dropped. One hash table (FNV-1a of the lower-cased
    bytes, mixed; open addressing) numbers the words; ``last[code]`` keeps a word once per text.
    Returns (codes, row offsets, vocabulary bytes, vocabulary offsets, ascii flags).

    The outputs are allocated at their upper bounds (untouched pages cost no memory) and the table is
    grown between texts, outside the scan: arrays reassigned inside the loop made numba count their
    references on every word (3.8 s instead of 0.9 s on 200k texts). Releases the GIL: memcurator.text
    runs parts of a column on threads and numbers their vocabularies as one."""
    n = offsets.shape[0] - 1
    words_bound = (data.shape[0] + stop_data.shape[0]) // 2 + n + stop_offsets.shape[0] + 1
    vocab = np.empty(data.shape[0] + stop_data.shape[0], dtype=np.uint8)
    vocab_offsets = np.empty(words_bound + 1, dtype=np.int64)
    vocab_offsets[0] = 0
    last = np.empty(words_bound, dtype=np.int64)
    codes = np.empty(words_bound, dtype=np.uint32)
    row_offsets = np.zeros(n + 1, dtype=np.int64)
    ascii = np.ones(n, dtype=np.bool_)
    state = np.zeros(3, dtype=np.int64)  # words in the vocabulary, codes written, stopwords
    slots = np.full(1 << 12, -1, dtype=np.int64)
    hashes = np.zeros(1 << 12, dtype=np.uint64)
    # the stopwords take the first codes (and are never written out); the texts' words come after them
    slots, hashes = _scan_all(stop_data, stop_offsets, False, slots, hashes, vocab, vocab_offsets, last, codes,
                              row_offsets, ascii, state)
    state[2] = state[0]
    slots, hashes = _scan_all(data, offsets, True, slots, hashes, vocab, vocab_offsets, last, codes, row_offsets,
                              ascii, state)
    size, count, stops = state[0], state[1], state[2]  # distinct stopwords: a list may repeat one
    v0 = vocab_offsets[stops]
    return (codes[:count].copy(), row_offsets, vocab[v0:vocab_offsets[size]].copy(),
            vocab_offsets[stops:size + 1] - v0, ascii)


@numba.njit(cache=True)
def _scan_all(text, offsets, emit, slots, hashes, vocab, vocab_offsets, last, codes, row_offsets, ascii,
              state):  # pragma: no cover - compiled
    """Every text into the table, the table doubled whenever the next text could fill it past half;
    returns the table."""
    n = offsets.shape[0] - 1
    done = 0
    while done < n:
        done = _scan_words(text, offsets, done, n, emit, slots, hashes, vocab, vocab_offsets, last, codes,
                           row_offsets, ascii, state)
        if done < n:
            slots, hashes = _rehash(2 * slots.shape[0], vocab, vocab_offsets, state[0])
    return slots, hashes


@numba.njit(cache=True)
def _rehash(capacity, vocab, vocab_offsets, size):  # pragma: no cover - compiled
    slots = np.full(capacity, -1, dtype=np.int64)
    hashes = np.zeros(capacity, dtype=np.uint64)
    for c in range(size):
        h = _mix(_fnv(vocab, vocab_offsets[c], vocab_offsets[c + 1]))
        s = np.int64(h & np.uint64(capacity - 1))
        while slots[s] >= 0:
            s = (s + 1) & (capacity - 1)
        slots[s] = c
        hashes[s] = h
    return slots, hashes


@numba.njit(cache=True)
def _scan_words(text, offsets, first, n, emit, slots, hashes, vocab, vocab_offsets, last, codes, row_offsets,
                ascii, state):  # pragma: no cover - compiled
    """Texts first..n-1 into the table (and, with ``emit``, into codes); stops early at the first text
    that could fill the table past half, and returns where it stopped."""
    capacity = slots.shape[0]
    size, count, stops = state[0], state[1], state[2]
    d = first
    while d < n:
        start, end = offsets[d], offsets[d + 1]
        if 2 * (size + (end - start + 1) // 2) > capacity:
            break
        if emit:
            bits = np.uint8(0)  # or-ed without an early exit: the loop vectorises
            for i in range(start, end):
                bits |= text[i]
            if bits >= 128:
                ascii[d] = False
        if not emit or ascii[d]:
            i = start
            while i < end:
                if FOLD[text[i]] == 0:
                    i += 1
                    continue
                j = i
                h = np.uint64(0xCBF29CE484222325)
                while j < end:
                    c = FOLD[text[j]]
                    if c == 0:
                        break
                    h = (h ^ np.uint64(c)) * np.uint64(0x100000001B3)
                    j += 1
                h = _mix(h)
                length = j - i
                slot = np.int64(h & np.uint64(capacity - 1))
                code = -1
                while slots[slot] >= 0:
                    if hashes[slot] == h:
                        other = slots[slot]
                        o = vocab_offsets[other]
                        if vocab_offsets[other + 1] - o == length:
                            same = True
                            for k in range(length):
                                if vocab[o + k] != FOLD[text[i + k]]:
                                    same = False
                                    break
                            if same:
                                code = other
                                break
                    slot = (slot + 1) & (capacity - 1)
                if code < 0:
                    code = size
                    size += 1
                    o = vocab_offsets[code]
                    for k in range(length):
                        vocab[o + k] = FOLD[text[i + k]]
                    vocab_offsets[code + 1] = o + length
                    last[code] = -1
                    slots[slot] = code
                    hashes[slot] = h
                if emit and code >= stops and last[code] != d:
                    last[code] = d
                    codes[count] = code - stops
                    count += 1
                i = j
        if emit:
            row_offsets[d + 1] = count
        d += 1
    state[0], state[1] = size, count
    return d


@numba.njit(cache=True)
def _mix(h):  # pragma: no cover - compiled
    """MurmurHash3's 64-bit finalizer: FNV's low bits alone cluster in the table."""
    h = (h ^ (h >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)
    h = (h ^ (h >> np.uint64(33))) * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@numba.njit(cache=True)
def _fnv(data, start, end):  # pragma: no cover - compiled
    h = np.uint64(0xCBF29CE484222325)
    for j in range(start, end):
        h = (h ^ np.uint64(data[j])) * np.uint64(0x100000001B3)
    return h


@numba.njit(cache=True)
def splice_rows(codes, offsets, rows, more_codes, more_offsets):  # pragma: no cover - compiled
    """CSR rows with the (empty) rows ``rows`` (ascending) replaced by the rows of ``more``, in order."""
    n = offsets.shape[0] - 1
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    out = np.empty(codes.shape[0] + more_codes.shape[0], dtype=codes.dtype)
    k = 0
    count = 0
    for d in range(n):
        if k < rows.shape[0] and rows[k] == d:
            start, end, source = more_offsets[k], more_offsets[k + 1], more_codes
            k += 1
        else:
            start, end, source = offsets[d], offsets[d + 1], codes
        for t in range(start, end):
            out[count] = source[t]
            count += 1
        out_offsets[d + 1] = count
    return out[:count], out_offsets
