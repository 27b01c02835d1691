"""Text normalisation and shingling, vectorised over whole columns."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

WORD = r"\w+"
PART_TEXTS = 20_000  # the compiled scan splits a column into parts of at least this many texts
# A smaller batch (texts, documents or pairs) is read without the compiled loops (polars and numpy),
# unless the process has loaded them: importing numba and loading the loops costs a process 1.2-1.6 s
# (0.30-0.34 s with the bytecode compiled at setup), more than the uncompiled code takes for the thousands
# of entries an incremental night changes.
COMPILED_FROM = 50_000
# A night whose core.entries folded at least this many entries loads the loops ahead, in a thread, while
# the stages before the near-duplicate stage run in DuckDB (load_compiled_ahead). A 1 %-churn night at 1M
# entries (10k folded): its near-duplicate stage 0.83-0.86 s with the loops loaded so, 0.98-1.03 s without;
# the load took 0.05-0.08 s from core.recall_results' stage, the one beside it; the night 4.20-4.33 s against
# 4.31-4.39 s (lab, six alternated nights each, tables identical). A night that folded fewer loads nothing.
COMPILED_AHEAD_FROM = 5_000
# The loops load_compiled_ahead calls (memcurator/kernels.py). It loads them only when numba's cache beside
# the module (its default place) holds each: a fresh installation's first night compiles them where a stage
# calls them, as before.
AHEAD_LOOPS = ("ascii_word_codes", "row_sums", "min_hashes", "band_keys", "stamped_jaccard", "judge_token_codes",
               "judge_lists")
_ahead: threading.Thread | None = None  # the thread loading them, if one was started
# Function words carry no topic: with them, short templated sentences about different things
# ("the timeout of ledger is 20 seconds" / "... of billing-api ...") look like duplicates.
STOPWORDS = ["a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "to", "in", "on", "at", "and",
             "or", "for", "with", "by", "from", "it", "its", "as", "that", "this", "there", "do", "does", "has",
             "have", "had", "i", "you", "we", "they", "he", "she"]


def shingle_column(texts: pl.Series, words: int = 1, drop_stopwords: bool = False) -> pl.Series:
    """List of distinct word n-gram shingles per text (lower-cased, punctuation dropped).

    A text shorter than ``words`` words has its whole token sequence as its one shingle.
    """
    # the streaming engine runs the regex on both cores (1.56 s -> 0.65 s on 200k texts of 60 words)
    tokens = (pl.LazyFrame({"t": texts})
              .select(pl.col("t").fill_null("").str.to_lowercase().str.extract_all(WORD).fill_null([]))
              .collect(engine="streaming")["t"])
    if drop_stopwords:
        tokens = tokens.list.eval(pl.element().filter(~pl.element().is_in(STOPWORDS)))
    if words <= 1:
        return tokens.list.unique(maintain_order=True).alias("shingles")
    frame = pl.DataFrame({"tokens": tokens}).with_row_index("doc")
    exploded = frame.explode("tokens").drop_nulls("tokens")
    grams = (exploded.with_columns(
                 pl.concat_str([pl.col("tokens").shift(-k).over("doc") for k in range(words)], separator=" ")
                 .alias("gram"))
             .drop_nulls("gram")
             .group_by("doc", maintain_order=True).agg(pl.col("gram").unique(maintain_order=True)))
    out = (frame.join(grams, on="doc", how="left", maintain_order="left")
           .with_columns(pl.when(pl.col("gram").is_null() & (pl.col("tokens").list.len() > 0))
                         .then(pl.concat_list(pl.col("tokens").list.join(" ")))
                         .otherwise(pl.col("gram").fill_null([]))
                         .alias("shingles")))
    return out["shingles"]


@dataclass(frozen=True)
class ShingleCodes:
    """Each text's distinct shingles as numbers (first-seen order) and the shingle each number stands for
    (``vocabulary[code]``); numbers compare within one call only. ``codes``/``rows``: the numbers in CSR
    form (text r: ``codes[rows[r]:rows[r + 1]]``), which ``lists`` (List[UInt32]) shares without a copy."""
    codes: np.ndarray
    rows: np.ndarray
    vocabulary: pl.Series

    @property
    def lists(self) -> pl.Series:
        assert self.codes.dtype == np.uint32 and self.rows.dtype == np.int64, "shared as Arrow buffers as they are"
        values = pa.Array.from_buffers(pa.uint32(), len(self.codes), [None, pa.py_buffer(self.codes)])
        return pl.Series("shingles", pa.Array.from_buffers(pa.large_list(pa.uint32()), len(self.rows) - 1,
                                                           [None, pa.py_buffer(self.rows)], children=[values]))


def compiled(batch: int, choice: bool | None = None) -> bool:
    """Whether a batch of this size goes through the compiled loops (``choice``, when given, decides)."""
    return choice if choice is not None else batch >= COMPILED_FROM or "memcurator.kernels" in sys.modules


def compiled_loops():
    """The module of the compiled loops (memcurator.kernels), once a load begun by load_compiled_ahead has
    ended: no loop runs beside the load's (numba's parallel loops may not be safe to start from two threads
    at once, whatever its threading layer)."""
    if _ahead is not None and _ahead is not threading.current_thread():
        _ahead.join()
    from memcurator import kernels  # numba: only a process that shingles pays its import

    return kernels


def load_compiled_ahead(entries: int) -> bool:
    """Load the compiled loops in a thread when a night changed at least COMPILED_AHEAD_FROM ``entries`` and
    numba's cache holds them; whether it started. The stages after core.entries run in DuckDB, which
    leaves the interpreter free, so the load mostly takes a core they leave idle; a stage that shingles
    before it ends waits for it (compiled_loops), or takes the uncompiled code if the module is not yet
    imported: the same shingles either way (tests/unit/test_text.py)."""
    global _ahead
    if entries < COMPILED_AHEAD_FROM or "memcurator.kernels" in sys.modules or not _loops_cached():
        return False
    # not a daemon: a process that ends before the load (a step run in a process of its own) waits for it,
    # rather than stop a thread that may be inside numba's compiler
    _ahead = threading.Thread(target=_load_loops, name="memcurator-compiled-loops")
    _ahead.start()
    return True


def _loops_cached() -> bool:
    folder = Path(__file__).with_name("__pycache__")
    return all(any(folder.glob(f"kernels.{loop}-*.nbi")) for loop in AHEAD_LOOPS)


def _load_loops() -> None:
    """Each loop of AHEAD_LOOPS called once, on two short texts, through the functions the stages call (so
    with their argument types: numba compiles another version for others)."""
    from memcurator import clustering, detect, kernels, minhash  # noqa: F401 (kernels: compiled() is true from here)
    from memcurator.config import CurationConfig

    cfg = CurationConfig()
    texts = ["the deploy timeout of billing-api is 30 seconds since the last release",
             "the deploy timeout of billing-api is 31 seconds since the last release"]
    docs, vocabulary = clustering.with_text_keys(pl.DataFrame({"doc": [0, 1], "norm_text": texts}), cfg)
    clustering.band_keys_of(minhash.token_rows(docs["shingles"], vocabulary), cfg)
    clustering.verify(pl.DataFrame({"a": [0], "b": [1]}), docs.select("doc", "shingles"))
    detect.features(pl.Series(texts))


def shingle_codes(texts: pl.Series, words: int = 1, drop_stopwords: bool = False,
                  use_compiled: bool | None = None, vocabulary: pl.Series | None = None) -> ShingleCodes:
    """shingle_column's shingles, numbered, without a string per occurrence: single words of ASCII
    texts are read by one compiled scan (memcurator/kernels.py); texts with other characters (whose
    words are Unicode's), word n-grams and small batches go through shingle_column and are numbered
    against the same vocabulary. Same shingles, same order as shingle_column (tests/unit/test_text.py);
    at 1M texts of 60 words the scan takes ~2.7 s on two cores where the regex, stopword filter,
    de-duplication, numbering and set keys took ~15 s. With ``vocabulary`` (of an earlier call), its
    strings keep their codes and the others are numbered after them: the codes compare with that call's."""
    if words != 1 or not compiled(len(texts), use_compiled):
        return number_lists(shingle_column(texts, words, drop_stopwords), vocabulary)
    kernels = compiled_loops()
    data, offsets = utf8(texts)
    stop_data, stop_offsets = utf8(pl.Series(STOPWORDS if drop_stopwords else [], dtype=pl.String))
    found = _ascii_word_codes(kernels, data, offsets, stop_data, stop_offsets)
    codes = with_unicode_rows(found, texts, lambda others: shingle_column(others, 1, drop_stopwords), "shingle")
    return codes if vocabulary is None else renumbered(codes, vocabulary)


def renumbered(codes: ShingleCodes, vocabulary: pl.Series) -> ShingleCodes:
    """``codes`` numbered against ``vocabulary`` instead of their own: the strings it lacks appended, in the
    order of their own vocabulary (numbered as one list, whose codes are each own code's new one)."""
    mapped = number_lists(codes.vocabulary.implode(), vocabulary)
    return ShingleCodes(mapped.codes[codes.codes], codes.rows, mapped.vocabulary)


def with_unicode_rows(found: tuple[np.ndarray, ...], texts: pl.Series, lists_of, name: str) -> ShingleCodes:
    """A compiled scan's result (codes, rows, vocabulary bytes and offsets, ascii flags; see in_parts) as
    ShingleCodes: the texts it left empty for a non-ASCII byte are read by ``lists_of`` (texts -> lists of
    strings, Unicode's reading), numbered against the scan's vocabulary and put in their rows."""
    kernels = compiled_loops()
    codes, rows, vocab_data, vocab_offsets, ascii = found
    vocabulary = pl.Series(pa.LargeStringArray.from_buffers(
        len(vocab_offsets) - 1, pa.py_buffer(vocab_offsets), pa.py_buffer(vocab_data)))
    if not ascii.all():
        others = np.flatnonzero(~ascii)
        unicode = number_lists(lists_of(texts.gather(others)), vocabulary)
        codes, rows = kernels.splice_rows(codes, rows, others, unicode.codes, unicode.rows)
        vocabulary = unicode.vocabulary
    return ShingleCodes(codes, rows, vocabulary.alias(name))


def _ascii_word_codes(kernels, data: np.ndarray, offsets: np.ndarray, stop_data: np.ndarray,
                      stop_offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """kernels.ascii_word_codes on parts of the column at once (see in_parts)."""
    no_stops = np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    return in_parts(lambda d, o: _scan(kernels, d, o, stop_data, stop_offsets),
                    lambda d, o: _scan(kernels, d, o, *no_stops), data, offsets)


def in_parts(scan, rescan, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """A compiled scan ``scan(data, offsets)`` -> (codes, rows, vocabulary bytes, vocabulary offsets, ascii
    flags) on parts of the column at once (one thread per core; the kernels release the GIL), then the
    parts' vocabularies numbered as one: each part's words, in part order, read as one-word texts by
    ``rescan`` (which must read a word of its own vocabulary as that one word), so the numbers are the
    ones a single scan gives (first-seen order)."""
    kernels = compiled_loops()
    n = len(offsets) - 1
    parts = min(kernels.numba.get_num_threads(), max(1, n // PART_TEXTS))
    if parts == 1:
        return scan(data, offsets)
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    with ThreadPoolExecutor(parts) as pool:
        found = list(pool.map(lambda lo, hi: scan(data[offsets[lo]:offsets[hi]], offsets[lo:hi + 1] - offsets[lo]),
                              bounds[:-1], bounds[1:]))
    words = np.concatenate([part[2] for part in found])
    starts = np.cumsum([0] + [len(part[2]) for part in found])
    word_offsets = np.concatenate([[0]] + [part[3][1:] + start for part, start in zip(found, starts)])
    word_codes, _, vocab_data, vocab_offsets, _ = rescan(words, word_offsets)
    first = np.cumsum([0] + [len(part[3]) - 1 for part in found])
    codes = np.concatenate([word_codes[base + part[0]] for part, base in zip(found, first)])
    ends = np.cumsum([0] + [part[1][-1] for part in found])
    rows = np.concatenate([[0]] + [part[1][1:] + end for part, end in zip(found, ends)])
    return codes, rows, vocab_data, vocab_offsets, np.concatenate([part[4] for part in found])


def _scan(kernels, data: np.ndarray, offsets: np.ndarray, stop_data: np.ndarray, stop_offsets: np.ndarray):
    """kernels.ascii_word_codes, always called with one signature (read-only bytes, writable offsets): each
    other combination of flags is another compiled and cached version, which a process loads (~0.5 s) or,
    on a fresh checkout, compiles (~3 s)."""
    return kernels.ascii_word_codes(read_only(data), np.array(offsets, dtype=np.int64), read_only(stop_data),
                                    np.array(stop_offsets, dtype=np.int64))


def read_only(data: np.ndarray) -> np.ndarray:
    """Bytes as a kernel takes them: contiguous uint8, flagged read-only (one compiled signature)."""
    array = np.ascontiguousarray(data, dtype=np.uint8)
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def number_lists(lists: pl.Series, vocabulary: pl.Series | None = None) -> ShingleCodes:
    """Lists of strings numbered against ``vocabulary`` (new strings appended in first-seen order)."""
    vocabulary = pl.Series("shingle", [], pl.String) if vocabulary is None else vocabulary.alias("shingle")
    flat = lists.explode().drop_nulls().alias("shingle")
    vocabulary = pl.concat([vocabulary, flat.filter(~flat.is_in(vocabulary)).unique(maintain_order=True)])
    numbered = vocabulary.to_frame().with_row_index("code")
    codes = flat.to_frame().join(numbered, on="shingle", how="left", maintain_order="left")["code"]
    return ShingleCodes(codes.cast(pl.UInt32).to_numpy(), list_offsets(lists), vocabulary)


def list_offsets(lists: pl.Series) -> np.ndarray:
    """Where each list starts in the exploded values (CSR row offsets, int64; a null list is empty)."""
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
    return np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])


def utf8(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The bytes and the (int64) offsets of a string column, Arrow's layout; a null reads as empty."""
    array = texts.cast(pl.String).to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = array.cast(pa.large_string())
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    return (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)), offsets


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
