"""Shingle codes: the compiled scan reads the same shingles as the regex path (shingle_column)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading
import time

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash

from memcurator import clustering, minhash, text
from memcurator.text import number_lists, shingle_codes, shingle_column

HOSTILE = [
    "Always run the DB migrations before deploying the ledger service!",  # case, punctuation, stopwords
    "snake_case_names and CamelCase and x86_64 v2.1.0 #1234 /var/log/app.log",  # underscores and digits are word characters
    "",  # no words
    None,  # a null text reads as empty
    "   ... !!! ---   ",  # separators only
    "ünïcode wörds and ascii words",  # non-ASCII letters: Unicode's \w, read by the regex path
    "straße STRASSE Straße",  # lower-casing beyond ASCII
    "naïve café — naive cafe",  # the same words spelled two ways, and a dash outside ASCII
    "the the THE The a an",  # stopwords only
    "repeat repeat Repeat REPEAT once",  # one shingle per distinct word, first-seen order
    "日本語のテキスト と english words",  # words without ASCII letters
    "tab\tseparated\nlines\rand\x00nul",  # control characters separate words
    "ledger ledger-api ledger_api",  # a hyphen splits, an underscore does not
]


def decoded(codes) -> list[list[str]]:
    vocabulary = codes.vocabulary.to_list()
    return [[vocabulary[c] for c in row] for row in codes.lists.to_list()]


@pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "small-batch"])
@pytest.mark.parametrize("drop_stopwords", [False, True])
@pytest.mark.parametrize("words", [1, 2])
def test_codes_decode_to_the_regex_path_shingles(words, drop_stopwords, use_compiled):
    texts = pl.Series(HOSTILE, dtype=pl.String)
    assert decoded(shingle_codes(texts, words, drop_stopwords, use_compiled)) == \
        shingle_column(texts, words, drop_stopwords).to_list()


def test_a_small_batch_is_read_without_the_compiled_loops(monkeypatch):
    monkeypatch.delitem(sys.modules, "memcurator.kernels", raising=False)
    assert not text.compiled(text.COMPILED_FROM - 1) and text.compiled(text.COMPILED_FROM)
    assert text.compiled(1, True) and not text.compiled(10 ** 9, False)
    codes = shingle_codes(pl.Series(["b a b", "a c"]))
    assert "memcurator.kernels" not in sys.modules and decoded(codes) == [["b", "a"], ["a", "c"]]
    monkeypatch.setitem(sys.modules, "memcurator.kernels", importlib.import_module("memcurator.kernels"))
    assert text.compiled(1)  # loaded: every batch takes them


def test_codes_number_each_distinct_shingle_once():
    codes = shingle_codes(pl.Series(["b a b", "a c", "ünï a"]), use_compiled=True)
    assert codes.vocabulary.is_unique().all()
    assert codes.lists.to_list() == [[0, 1], [1, 2], [3, 1]]  # Unicode words appended after the ASCII scan's


@pytest.mark.parametrize("part_texts", [20_000, 700])
def test_many_texts_equal_the_regex_path(part_texts, monkeypatch):
    # thousands of texts from a small vocabulary with mixed case, a few non-ASCII ones among them: the
    # table grows several times and the Unicode rows are spliced back in place; scanned whole, and in
    # parts on threads whose vocabularies are numbered as one (the numbers a single scan gives)
    monkeypatch.setattr(text, "PART_TEXTS", part_texts)
    rng = np.random.default_rng(5)
    vocabulary = [f"w{i}" for i in range(3000)] + ["Café", "THE", "of", "x_1"]
    texts = [" ".join(rng.choice(vocabulary, int(k))) for k in rng.integers(0, 30, 4000)]
    texts[17] = "ünïcode " + texts[17]
    texts[3999] = "ending in ü"
    series = pl.Series(texts)
    codes = shingle_codes(series, 1, True, use_compiled=True)
    assert decoded(codes) == shingle_column(series, 1, True).to_list()
    monkeypatch.setattr(text, "PART_TEXTS", 10 ** 9)
    whole = shingle_codes(series, 1, True, use_compiled=True)
    assert codes.lists.to_list() == whole.lists.to_list()
    assert codes.vocabulary.to_list() == whole.vocabulary.to_list()


def test_an_empty_column_has_no_shingles():
    codes = shingle_codes(pl.Series([], dtype=pl.String))
    assert codes.lists.len() == 0 and codes.vocabulary.len() == 0


@pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "numpy"])
def test_set_keys_equal_the_sum_of_the_shingles_hashes(use_compiled):
    # the near-duplicate index stores these keys: they must not change with the way shingles are read
    texts = pl.Series(HOSTILE, dtype=pl.String)
    strings = shingle_column(texts, 1, True)
    expected = strings.list.eval(pl.element().hash()).list.sum().fill_null(0).to_list()
    assert clustering.set_keys(shingle_codes(texts, 1, True), use_compiled).tolist() == expected


def test_signatures_of_codes_equal_datasketch():
    texts = pl.Series([t for t in HOSTILE if t])
    codes = shingle_codes(texts, 1, True)
    ours = minhash.signatures(minhash.token_rows(codes.lists, codes.vocabulary), num_perm=64)
    for row, tokens in zip(ours, shingle_column(texts, 1, True).to_list()):
        reference = MinHash(num_perm=64, seed=1)
        for t in tokens:
            reference.update(t.encode("utf-8"))
        assert np.array_equal(row, reference.hashvalues.astype(np.uint32))


def test_numbering_extends_a_vocabulary():
    numbered = number_lists(pl.Series([["b", "z"], [], ["a"]]), pl.Series(["a", "b"]))
    assert numbered.vocabulary.to_list() == ["a", "b", "z"]
    assert numbered.lists.to_list() == [[1, 2], [], [0]]


@pytest.mark.parametrize("use_compiled", [True, False], ids=["compiled", "small-batch"])
def test_codes_numbered_against_an_earlier_vocabulary(use_compiled):
    # the near-duplicate stage numbers the partners' shingles against the fresh texts' vocabulary
    earlier = shingle_codes(pl.Series(["ledger api timeout", "café billing"]), 1, True, use_compiled)
    texts = pl.Series(HOSTILE + ["billing ledger ünï zzz"], dtype=pl.String)
    codes = shingle_codes(texts, 1, True, use_compiled, vocabulary=earlier.vocabulary)
    assert codes.vocabulary.to_list()[:earlier.vocabulary.len()] == earlier.vocabulary.to_list()
    assert codes.vocabulary.is_unique().all()
    assert decoded(codes) == shingle_column(texts, 1, True).to_list()
    assert codes.lists.to_list()[-1][:2] == [earlier.vocabulary.to_list().index(w) for w in ("billing", "ledger")]


def test_codes_need_their_vocabulary():
    with pytest.raises(ValueError, match="vocabulary"):
        minhash.token_rows(pl.Series([[0, 1]], dtype=pl.List(pl.UInt32)))


def test_a_stopword_list_may_repeat_a_word():
    # the vocabulary starts after the distinct stopwords, however the list was written
    from memcurator import kernels

    texts = pl.Series(["the cat of the hat", "a cat"])
    data, offsets = text.utf8(texts)
    stop_data, stop_offsets = text.utf8(pl.Series(["the", "of", "the", "a"]))
    codes, rows, vocab_data, vocab_offsets, _ = text._scan(kernels, data, offsets, stop_data, stop_offsets)
    assert bytes(vocab_data).decode() == "cathat" and vocab_offsets.tolist() == [0, 3, 6]
    assert codes.tolist() == [0, 1, 0] and rows.tolist() == [0, 2, 3]


AHEAD = """
import sys
from memcurator import text
started = text.load_compiled_ahead({entries})
if started:
    text._ahead.join()
from memcurator import kernels
misses = sum(len(getattr(kernels, loop).stats.cache_misses) for loop in text.AHEAD_LOOPS)
hits = sum(len(getattr(kernels, loop).stats.cache_hits) for loop in text.AHEAD_LOOPS)
print(started, misses, hits)
"""


def _in_fresh_process(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_a_night_that_changed_enough_entries_loads_the_compiled_loops_ahead_from_the_cache():
    """In a fresh process, load_compiled_ahead loads each loop the stages call from numba's cache (a cache hit,
    no compilation), in a thread; below COMPILED_AHEAD_FROM it starts nothing."""
    if not text._loops_cached():  # a fresh checkout: the loops compiled and cached once, as a first night does
        subprocess.run([sys.executable, "-c", "from memcurator import text; text._load_loops()"], check=True)
    assert text._loops_cached()
    assert _in_fresh_process(AHEAD.format(entries=text.COMPILED_AHEAD_FROM)) == [
        "True", "0", str(len(text.AHEAD_LOOPS))]
    assert _in_fresh_process(AHEAD.format(entries=text.COMPILED_AHEAD_FROM - 1)) == ["False", "0", "0"]


def test_a_compiled_loop_waits_for_the_load_ahead(monkeypatch):
    """compiled_loops returns once the thread loading the loops has ended (no loop runs beside the load's)."""
    ended = threading.Event()
    loading = threading.Thread(target=lambda: (time.sleep(0.3), ended.set()))
    monkeypatch.setattr(text, "_ahead", loading)
    loading.start()
    assert text.compiled_loops().__name__ == "memcurator.kernels" and ended.is_set()
