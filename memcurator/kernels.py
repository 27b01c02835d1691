"""The compiled loops behind memcurator.minhash, memcurator.text's word codes and memcurator.detect's tokens
(numba, cached on disk; parallel over documents or pairs where the work splits)."""

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
    (on 200k entries: 0.33 s sorting each band's whole column, then reading runs of equal keys; 0.18 s
    sorting each segment's keys; 0.10 s so). Two passes: count the pairs, then write them."""
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
                # (within a word, FOLD and LOWER agree)
                code, words = _code(text, i, j - i, h, slots, hashes, vocab, vocab_offsets, size)
                if words > size:
                    last[code] = -1
                    size = words
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


LETTER = 97  # FOLD maps A-Z and a-z to 97..122, digits to 48..57, the underscore to 95, others to 0
LOWER = np.array([b + 32 if 65 <= b <= 90 else b for b in range(256)], dtype=np.uint8)
NOT = np.frombuffer(b"not", dtype=np.uint8)
NOONE = np.frombuffer(b"noone", dtype=np.uint8)
ONE = np.frombuffer(b"one", dtype=np.uint8)
LONGER = np.frombuffer(b"longer", dtype=np.uint8)


@numba.njit(cache=True, nogil=True)
def judge_token_codes(data, offsets):  # pragma: no cover - compiled
    """The lexical judge's tokens (memcurator.detect._tokens) of each ASCII text, every occurrence in
    order, as codes into one vocabulary: lower-cased runs of letters, and numbers (``[a-z]+|\\d+(\\.\\d+)?``),
    read as if the text had first been rewritten ``n't`` -> " not", "no one" -> " noone" and
    "no longer" -> " not longer" (each between word boundaries, in that order). A text with a non-ASCII
    byte is left empty and flagged, as in ascii_word_codes, whose table this shares.
    Returns (codes, row offsets, vocabulary bytes, vocabulary offsets, ascii flags)."""
    n = offsets.shape[0] - 1
    vocab = np.empty(data.shape[0] + NOT.shape[0] + NOONE.shape[0], dtype=np.uint8)
    vocab_offsets = np.empty(data.shape[0] + 3, dtype=np.int64)  # a token takes a byte at least
    vocab_offsets[0] = 0
    codes = np.empty(data.shape[0] + 1, dtype=np.uint32)
    row_offsets = np.zeros(n + 1, dtype=np.int64)
    ascii = np.ones(n, dtype=np.bool_)
    state = np.zeros(2, dtype=np.int64)  # words in the vocabulary, codes written
    slots = np.full(1 << 12, -1, dtype=np.int64)
    hashes = np.zeros(1 << 12, dtype=np.uint64)
    done = 0
    while done < n:
        done = _judge_scan(data, offsets, done, n, slots, hashes, vocab, vocab_offsets, codes, row_offsets, ascii,
                           state)
        if done < n:
            slots, hashes = _rehash(2 * slots.shape[0], vocab, vocab_offsets, state[0])
    size, count = state[0], state[1]
    return codes[:count].copy(), row_offsets, vocab[:vocab_offsets[size]].copy(), vocab_offsets[:size + 1].copy(), ascii


@numba.njit(cache=True)
def _judge_scan(text, offsets, first, n, slots, hashes, vocab, vocab_offsets, codes, row_offsets, ascii,
                state):  # pragma: no cover - compiled
    """Texts first..n-1 (see judge_token_codes); stops at the first text that could fill the table past
    half, and returns where it stopped. A run of letters is hashed as it is read and the counters are
    kept in locals (on 110k texts in one thread: 0.9 s hashing each run again after finding its end, with
    the counters in ``state``; 0.7 s so; 1.3 s with a case test per byte instead of a table)."""
    size, count = state[0], state[1]
    d = first
    while d < n:
        start, end = offsets[d], offsets[d + 1]
        if 2 * (size + (end - start) + 2) > slots.shape[0]:
            break
        bits = np.uint8(0)  # or-ed without an early exit: the loop vectorises
        for i in range(start, end):
            bits |= text[i]
        if bits >= 128:
            ascii[d] = False
        else:
            i = start
            while i < end:
                c = FOLD[text[i]]
                if c >= LETTER:
                    j, h = _letters(text, i, end)
                    e, nt = _without_nt(text, i, j, end)
                    if (not nt and e - i == 2 and c == 110 and FOLD[text[i + 1]] == 111
                            and (i == start or FOLD[text[i - 1]] == 0) and j + 1 < end and text[j] == 32
                            and FOLD[text[j + 1]] >= LETTER):
                        # "no" then one space and a word: "no one" and "no longer" are rewritten
                        k = j + 1
                        m, _ = _letters(text, k, end)
                        e2, nt2 = _without_nt(text, k, m, end)
                        if nt2 or m == end or FOLD[text[m]] == 0:
                            if _is(text, k, e2, ONE):
                                codes[count], size = _code(NOONE, 0, NOONE.shape[0], _fnv(NOONE, 0, NOONE.shape[0]),
                                                           slots, hashes, vocab, vocab_offsets, size)
                                count += 1
                                i = e2  # a following n't is read from its "n"
                                continue
                            if _is(text, k, e2, LONGER):
                                codes[count], size = _code(NOT, 0, NOT.shape[0], _fnv(NOT, 0, NOT.shape[0]),
                                                           slots, hashes, vocab, vocab_offsets, size)
                                count += 1
                                i = j
                                continue
                    if e > i:
                        if nt:  # the run's hash counted the "n"
                            h = _fnv_lower(text, i, e)
                        codes[count], size = _code(text, i, e - i, h, slots, hashes, vocab, vocab_offsets, size)
                        count += 1
                    if nt:
                        codes[count], size = _code(NOT, 0, NOT.shape[0], _fnv(NOT, 0, NOT.shape[0]),
                                                   slots, hashes, vocab, vocab_offsets, size)
                        count += 1
                        i = j + 2
                    else:
                        i = j
                elif 48 <= c <= 57:
                    j = i
                    while j < end and 48 <= text[j] <= 57:
                        j += 1
                    if j + 1 < end and text[j] == 46 and 48 <= text[j + 1] <= 57:
                        j += 2
                        while j < end and 48 <= text[j] <= 57:
                            j += 1
                    codes[count], size = _code(text, i, j - i, _fnv(text, i, j), slots, hashes, vocab, vocab_offsets,
                                               size)
                    count += 1
                    i = j
                else:
                    i += 1
        row_offsets[d + 1] = count
        d += 1
    state[0], state[1] = size, count
    return d


@numba.njit(cache=True)
def judge_lists(codes, rows, stem_of, negation, value, rank, dropped, plain, has_antonym):  # pragma: no cover - compiled
    """What the lexical judge reads from each text's tokens (CSR rows of token codes, see
    judge_token_codes), in one pass: the number of negation-cue tokens; the distinct content stems (not
    ``dropped``; first-seen order); the distinct value tokens in string order (``rank``); the content
    stems that are ``plain`` (no number, no value word); the content stems that ``has_antonym``. Each list
    as (codes, row offsets): stems for all but the values, tokens for those. A stem or token is taken
    once per text by stamping it with the text's number."""
    n = rows.shape[0] - 1
    total = codes.shape[0]
    negations = np.zeros(n, dtype=np.int64)
    content, values = np.empty(total, dtype=np.uint32), np.empty(total, dtype=np.uint32)
    plains, antonyms = np.empty(total, dtype=np.uint32), np.empty(total, dtype=np.uint32)
    content_rows, value_rows = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    plain_rows, antonym_rows = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    stem_seen = np.zeros(dropped.shape[0], dtype=np.int64)
    value_seen = np.zeros(value.shape[0], dtype=np.int64)
    kc = kv = kp = ka = 0
    for r in range(n):
        mark = r + 1
        first_value = kv
        for t in range(rows[r], rows[r + 1]):
            code = codes[t]
            if negation[code]:
                negations[r] += 1
            stem = stem_of[code]
            if not dropped[stem] and stem_seen[stem] != mark:
                stem_seen[stem] = mark
                content[kc] = stem
                kc += 1
                if plain[stem]:
                    plains[kp] = stem
                    kp += 1
                if has_antonym[stem]:
                    antonyms[ka] = stem
                    ka += 1
            if value[code] and value_seen[code] != mark:
                value_seen[code] = mark
                k = kv  # inserted in string order (a text states few values)
                while k > first_value and rank[values[k - 1]] > rank[code]:
                    values[k] = values[k - 1]
                    k -= 1
                values[k] = code
                kv += 1
        content_rows[r + 1], value_rows[r + 1], plain_rows[r + 1], antonym_rows[r + 1] = kc, kv, kp, ka
    return (negations, (content[:kc].copy(), content_rows), (values[:kv].copy(), value_rows),
            (plains[:kp].copy(), plain_rows), (antonyms[:ka].copy(), antonym_rows))


@numba.njit(cache=True, inline="always")
def _letters(text, i, end):  # pragma: no cover - compiled
    """Where the run of letters from i ends, and its lower-cased bytes' FNV-1a hash."""
    h = np.uint64(0xCBF29CE484222325)
    while i < end:
        c = FOLD[text[i]]
        if c < LETTER:
            break
        h = (h ^ np.uint64(c)) * np.uint64(0x100000001B3)
        i += 1
    return i, h


@numba.njit(cache=True, inline="always")
def _without_nt(text, i, j, end):  # pragma: no cover - compiled
    """Where the letters i..j-1 end once an ``n't`` at their end (followed by a word boundary) is rewritten
    to " not", and whether it is."""
    if (FOLD[text[j - 1]] == 110 and j + 1 < end and text[j] == 39 and FOLD[text[j + 1]] == 116
            and (j + 2 == end or FOLD[text[j + 2]] == 0)):
        return j - 1, True
    return j, False


@numba.njit(cache=True, inline="always")
def _is(text, i, j, word):  # pragma: no cover - compiled
    """Whether text[i:j], lower-cased, is ``word`` (lower-case bytes)."""
    if j - i != word.shape[0]:
        return False
    for k in range(j - i):
        if FOLD[text[i + k]] != word[k]:
            return False
    return True


@numba.njit(cache=True, inline="always")
def _fnv_lower(data, start, end):  # pragma: no cover - compiled
    h = np.uint64(0xCBF29CE484222325)
    for j in range(start, end):
        h = (h ^ np.uint64(LOWER[data[j]])) * np.uint64(0x100000001B3)
    return h


@numba.njit(cache=True, inline="always")
def _code(source, i, length, h, slots, hashes, vocab, vocab_offsets, size):  # pragma: no cover - compiled
    """The code of the word source[i:i + length] (lower-cased; ``h`` its FNV-1a hash), numbered ``size``
    if new; returns (code, words in the vocabulary)."""
    capacity = slots.shape[0]
    h = _mix(h)
    slot = np.int64(h & np.uint64(capacity - 1))
    while slots[slot] >= 0:
        if hashes[slot] == h:
            other = slots[slot]
            o = vocab_offsets[other]
            if vocab_offsets[other + 1] - o == length:
                same = True
                for k in range(length):
                    if vocab[o + k] != LOWER[source[i + k]]:
                        same = False
                        break
                if same:
                    return other, size
        slot = (slot + 1) & (capacity - 1)
    o = vocab_offsets[size]
    for k in range(length):
        vocab[o + k] = LOWER[source[i + k]]
    vocab_offsets[size + 1] = o + length
    slots[slot] = size
    hashes[slot] = h
    return size, size + 1


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
