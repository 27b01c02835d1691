"""The default contradiction judge: polarity, value and change-marker conflicts between two texts.

Vectorised over a frame of pairs (``text_a``, ``text_b``). For each pair:

- content tokens: lower-cased words, "n't" read as "not", stemmed, without stopwords and without
  negation cues; overlap = Jaccard of the content tokens;
- **negation**: exactly one side carries a negation cue (not, no, never, nobody, nothing, none,
  no one, no longer, neither, nor, cannot) and the content tokens overlap (Jaccard >=
  ``negation_overlap``, or the smaller side is contained >= ``negation_containment``);
- **value**: both sides state numbers (or true/false/enabled/disabled), the values differ, the
  overlap of everything else >= ``value_overlap``, and both name the same identifiers (two notes
  about run r123 and run r456 are about different things, not competing values);
- **antonym**: a word on one side has its antonym (a short list of common English antonyms) on
  the other, and the rest overlaps >= ``antonym_overlap``;
- **change**: one side says "instead of", "no longer", "deprecated", "removed", "replaced" or
  "changed" and overlap >= ``change_overlap``.

Confidence is the overlap (the more the rest agrees, the surer the conflict). Thresholds are
calibrated on SICK (docs/calibration.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import Stemmer

from memcurator import text

NEGATION_CUES = ["not", "no", "never", "nobody", "nothing", "none", "noone", "neither", "nor", "cannot", "without"]
STOPWORDS = {"a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "of", "to", "in", "on", "at",
             "and", "or", "for", "with", "by", "from", "there", "this", "that", "it", "its", "as", "some", "any",
             "do", "does", "did", "has", "have", "had", "which", "who", "into", "onto", "his", "her", "their", "one"}
VALUE_WORDS = ["true", "false", "enabled", "disabled"]
# Common English antonyms (both directions), matched after stemming.
ANTONYMS = [("near", "far"), ("empty", "full"), ("inside", "outside"), ("indoor", "outdoor"), ("open", "close"),
            ("start", "stop"), ("enabl", "disabl"), ("allow", "deni"), ("success", "failur"), ("pass", "fail"),
            ("increas", "decreas"), ("alway", "never"), ("true", "fals"), ("asleep", "awak"), ("accept", "reject"),
            ("requir", "option"), ("public", "privat"), ("sync", "async"), ("mutabl", "immut"), ("present", "absent"),
            ("visibl", "invis"), ("legal", "illeg"), ("safe", "unsaf"), ("support", "unsupport")]
ANTONYM_MAP = {a: b for a, b in ANTONYMS} | {b: a for a, b in ANTONYMS}
CHANGE = r"\b(instead of|no longer|deprecated|removed|replaced|changed|switched)\b"
# Identifiers (r123456, #4471, build-930, paths, hex ids): two notes naming different ones are about
# different things, so their numbers are not competing values of one attribute.
IDENTIFIER = r"(#\d+|\b\w*[a-z]\w*\d{3,}\w*\b|\b\w*\d{3,}\w*[a-z]\w*\b|/[\w./-]+|\b[0-9a-f]{8,}\b)"
_STEM = Stemmer.Stemmer("english")


@dataclass(frozen=True)
class JudgeSettings:
    negation_overlap: float = 0.55
    negation_containment: float = 0.85
    value_overlap: float = 0.7
    change_overlap: float = 0.4
    antonym_overlap: float = 0.5


def _tokens(col: str) -> pl.Expr:
    text = (pl.col(col).str.to_lowercase()
            .str.replace_all(r"n't\b", " not")
            .str.replace_all(r"\bno one\b", " noone")
            .str.replace_all(r"\bno longer\b", " not longer"))
    return text.str.extract_all(r"[a-z]+|\d+(?:\.\d+)?")


def _stems(tokens: pl.DataFrame) -> pl.Expr:
    """``_t`` (lists of words) stemmed: the distinct words found on the streaming engine (both cores; 3.0 s
    -> 0.3 s on 300k texts), each stemmed once; the mapping as two series, not a dict."""
    vocab = (tokens.lazy().select(pl.col("_t").explode().drop_nulls().unique()).collect(engine="streaming")["_t"])
    stems = pl.Series(_STEM.stemWords(vocab.to_list()), dtype=pl.String)
    return pl.col("_t").list.eval(pl.element().replace_strict(vocab, stems, default=pl.element()))


IS_NUMBER = r"^\d+(\.\d+)?$"
DROP = sorted(STOPWORDS | set(NEGATION_CUES))  # not content: matched against the stems


def features(texts: pl.Series, use_compiled: bool | None = None) -> tuple[pl.DataFrame, pl.Series]:
    """Everything the judge reads from one text, computed once per distinct text (a text takes part
    in many pairs): negation cues, content stems, values, identifiers, change markers. The stems
    (content ``_c``, plain ``_n``) and their antonyms (``_ant``) are codes into the word list returned
    with the frame: the judge compares and joins numbers, and reads a word only for its evidence. A big
    batch reads its tokens with a compiled scan and builds the lists from their codes (_coded_features);
    a small one in polars (the same lists, tested)."""
    texts = texts.unique()
    if text.compiled(len(texts), use_compiled):
        return _coded_features(texts)
    drop, is_num = DROP, IS_NUMBER
    # tokenised on the streaming engine (both cores: 1.9 s -> 0.9 s on 300k texts); joined back by text
    f = pl.LazyFrame({"_text": texts}).with_columns(_tokens("_text").alias("_t")).collect(engine="streaming")
    # the rest on the streaming engine too, in one plan (4.1-5.1 s -> 3.6-3.9 s on 190k texts of 60 words)
    f = f.lazy().with_columns(_stems(f).alias("_s"))
    f = f.with_columns(
        pl.col("_t").list.eval(pl.element().is_in(NEGATION_CUES)).list.sum().alias("_neg"),
        pl.col("_s").list.eval(pl.element().filter(~pl.element().is_in(drop))).list.unique().alias("_c"),
        pl.col("_t").list.eval(pl.element().filter(pl.element().str.contains(is_num) | pl.element().is_in(VALUE_WORDS)))
        .list.unique().list.sort().alias("_v"),
    )
    f = _markers(f).with_columns(
        pl.col("_c").list.eval(pl.element().filter(~pl.element().str.contains(is_num)
                                                   & ~pl.element().is_in(VALUE_WORDS))).alias("_n"),
        pl.col("_c").list.eval(pl.element().replace_strict(ANTONYM_MAP, default=None)).list.drop_nulls().alias("_ant"),
    ).drop("_t", "_s").collect(engine="streaming")
    words = pl.concat([f["_c"].explode(), f["_ant"].explode()]).drop_nulls().unique(maintain_order=True)
    numbers = pl.Series(np.arange(len(words), dtype=np.uint32))
    coded = lambda c: pl.col(c).list.eval(pl.element().replace_strict(words, numbers))  # noqa: E731
    return f.with_columns(coded("_c"), coded("_n"), coded("_ant")), words.alias("word")


def _markers(f: pl.LazyFrame) -> pl.LazyFrame:
    """The change marker and the identifiers, read from the text itself."""
    return f.with_columns(
        pl.col("_text").str.to_lowercase().str.contains(CHANGE).alias("_chg"),
        pl.col("_text").str.to_lowercase().str.extract_all(IDENTIFIER).list.unique().list.sort().alias("_id"))


def _token_codes(texts: pl.Series) -> text.ShingleCodes:
    """Each text's tokens (those of _tokens: every occurrence, in order) as codes into one vocabulary:
    ASCII texts by kernels.judge_token_codes on parts of the column at once, the others by _tokens'
    regex (Unicode lower-casing and letters), numbered against the same vocabulary."""
    from memcurator import kernels

    def scan(data: np.ndarray, offsets: np.ndarray):
        return kernels.judge_token_codes(text.read_only(data), np.array(offsets, dtype=np.int64))

    data, offsets = text.utf8(texts)
    return text.with_unicode_rows(
        text.in_parts(scan, scan, data, offsets), texts,
        lambda others: pl.DataFrame({"_text": others}).select(_tokens("_text").fill_null([]))["_text"], "token")


def _coded_features(texts: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
    """features() from token codes: what a list needs is looked up once per distinct token or stem (its
    stem, whether it is a negation cue, a value, dropped, plain, its antonym), then each text's lists
    are drawn from its codes by one compiled pass (kernels.judge_lists). The words are the stems, then
    the antonyms that are none of them."""
    from memcurator import kernels

    tokens = _token_codes(texts)
    vocabulary = tokens.vocabulary
    stem_of_token = pl.Series(_STEM.stemWords(vocabulary.to_list()), dtype=pl.String)
    stems = stem_of_token.unique(maintain_order=True)
    stem_code = (stem_of_token.to_frame("s").join(stems.to_frame("s").with_row_index("code"), on="s", how="left",
                                                 maintain_order="left")["code"].to_numpy().astype(np.int64))
    is_value = (vocabulary.str.contains(IS_NUMBER) | vocabulary.is_in(VALUE_WORDS))
    antonyms = stems.replace_strict(ANTONYM_MAP, default=None)
    words = pl.concat([stems, antonyms.drop_nulls()]).unique(maintain_order=True)
    antonym_code = (antonyms.to_frame("w").join(words.to_frame("w").with_row_index("code"), on="w", how="left",
                                                maintain_order="left")["code"].fill_null(0).to_numpy())
    lists = kernels.judge_lists(
        tokens.codes, tokens.rows, stem_code, vocabulary.is_in(NEGATION_CUES).to_numpy(), is_value.to_numpy(),
        vocabulary.rank("ordinal").to_numpy().astype(np.int64), stems.is_in(DROP).to_numpy(),
        (~(stems.str.contains(IS_NUMBER) | stems.is_in(VALUE_WORDS))).to_numpy(), antonyms.is_not_null().to_numpy())
    negations, (c_codes, c_rows), (v_codes, v_rows), (n_codes, n_rows), (a_codes, a_rows) = lists
    f = pl.DataFrame({
        "_text": texts,
        "_neg": pl.Series(negations, dtype=pl.UInt32),
        "_c": _code_lists(c_codes, c_rows),  # a stem's code is its word's: the stems come first
        "_v": _string_lists(vocabulary, v_codes, v_rows),
    })
    f = _markers(f.lazy()).collect(engine="streaming").with_columns(
        _code_lists(n_codes, n_rows).alias("_n"),
        _code_lists(antonym_code[a_codes].astype(np.uint32), a_rows).alias("_ant"))
    return f, words.alias("word")


def _code_lists(codes: np.ndarray, rows: np.ndarray) -> pl.Series:
    return text.ShingleCodes(codes, rows, pl.Series([], dtype=pl.String)).lists


def _string_lists(strings: pl.Series, codes: np.ndarray, rows: np.ndarray) -> pl.Series:
    """CSR rows of codes as lists of the strings they index."""
    flat = strings.gather(pl.Series(codes, dtype=pl.UInt32)).cast(pl.String).to_arrow()
    if isinstance(flat, pa.ChunkedArray):
        flat = flat.combine_chunks()
    return pl.Series(pa.LargeListArray.from_arrays(pa.array(rows, pa.int64()), flat.cast(pa.large_string())))


def judge(pairs: pl.DataFrame, settings: JudgeSettings = JudgeSettings()) -> pl.DataFrame:
    """Adds is_conflict, kind (negation/value/change or null), confidence and evidence to the pairs."""
    if pairs.height == 0:
        return pairs.with_columns(pl.lit(None, pl.String).alias("kind"), pl.lit(False).alias("is_conflict"),
                                  pl.lit(0.0).alias("confidence"), pl.lit(None, pl.String).alias("evidence"))
    feats, words = features(pl.concat([pairs["text_a"], pairs["text_b"]]))
    side = lambda s: feats.rename({c: (f"text_{s}" if c == "_text" else f"{c}{s}") for c in feats.columns})  # noqa: E731
    f = (pairs.with_row_index("_row")
         .join(side("a"), on="text_a", how="left").join(side("b"), on="text_b", how="left").sort("_row"))
    f = f.rename({"_nega": "_neg_a", "_negb": "_neg_b"})
    f = f.with_columns((pl.col("_chga") | pl.col("_chgb")).alias("_change"))
    # content overlap for every pair: one set operation (the lists hold unique stems, so the union's
    # size follows from the sizes); the costlier measures run only on the pairs that can use them
    f = f.with_columns(pl.col("_ca").list.set_intersection(pl.col("_cb")).list.len().alias("_inter"),
                       pl.col("_ca").list.len().alias("_lena"), pl.col("_cb").list.len().alias("_lenb"))
    f = f.with_columns((pl.col("_lena") + pl.col("_lenb") - pl.col("_inter")).alias("_union"),
                       pl.min_horizontal("_lena", "_lenb").alias("_smaller"))
    f = f.with_columns(
        pl.when(pl.col("_union") > 0).then(pl.col("_inter") / pl.col("_union")).otherwise(0.0).alias("_overlap"),
        pl.when(pl.col("_smaller") > 0).then(pl.col("_inter") / pl.col("_smaller")).otherwise(0.0).alias("_containment"))
    # value: the overlap of everything but the values, where both sides state different values about the same ids
    maybe_value = ((pl.col("_va").list.len() > 0) & (pl.col("_vb").list.len() > 0) & (pl.col("_va") != pl.col("_vb"))
                   & (pl.col("_ida") == pl.col("_idb")))
    rest = (f.filter(maybe_value).select(
        "_row", pl.col("_na").list.set_intersection(pl.col("_nb")).list.len().alias("_ia"),
        (pl.col("_na").list.len() + pl.col("_nb").list.len()).alias("_sizes"))
        .select("_row", pl.when(pl.col("_sizes") - pl.col("_ia") > 0)
                .then(pl.col("_ia") / (pl.col("_sizes") - pl.col("_ia"))).otherwise(0.0).alias("_rest_overlap")))
    # antonym: a content word of one side whose antonym is on the other side (and not on its own)
    anto = (f.filter(pl.col("_anta").list.len() > 0).select(
        "_row", pl.col("_anta").list.set_difference(pl.col("_ca")).list.set_intersection(
            pl.col("_cb").list.set_difference(pl.col("_ca"))).alias("_anto"))
        .with_columns(pl.col("_anto").list.eval(pl.element().replace_strict(
            pl.Series(np.arange(len(words), dtype=np.uint32)), words)).alias("_anto_words")))
    f = (f.join(rest, on="_row", how="left").join(anto, on="_row", how="left")
         .with_columns(pl.col("_rest_overlap").fill_null(0.0), pl.col("_anto").fill_null([]),
                       pl.col("_anto_words").fill_null([]), maybe_value.alias("_maybe_value")))
    inter, union = pl.col("_inter"), pl.col("_union")
    # the negated claim is usually the shorter one: measure how much of the smaller side the other repeats
    negation = ((pl.col("_neg_a") > 0) != (pl.col("_neg_b") > 0)) & (
        (pl.col("_overlap") >= settings.negation_overlap) | (pl.col("_containment") >= settings.negation_containment))
    value = pl.col("_maybe_value") & (pl.col("_rest_overlap") >= settings.value_overlap)
    change = pl.col("_change") & (pl.col("_overlap") >= settings.change_overlap)
    # the antonym pair itself counts as agreement when measuring the overlap of the rest
    anto_overlap = (inter + 2 * pl.col("_anto").list.len()) / pl.max_horizontal(union, 1)
    antonym = (pl.col("_anto").list.len() > 0) & (anto_overlap >= settings.antonym_overlap)
    kind = (pl.when(value).then(pl.lit("value")).when(negation).then(pl.lit("negation"))
            .when(antonym).then(pl.lit("antonym")).when(change).then(pl.lit("change"))
            .otherwise(pl.lit(None, pl.String)))
    f = f.with_columns(kind.alias("kind"))
    f = f.with_columns(
        pl.col("kind").is_not_null().alias("is_conflict"),
        pl.when(pl.col("kind") == "value").then(pl.col("_rest_overlap"))
        .when(pl.col("kind") == "negation").then(pl.col("_containment")).otherwise(pl.col("_overlap"))
        .fill_null(0.0).alias("confidence"),
        pl.when(pl.col("kind") == "value")
        .then(pl.format("different values {} vs {} for the same statement (rest overlap {})",
                        pl.col("_va").list.join(","), pl.col("_vb").list.join(","), pl.col("_rest_overlap").round(2)))
        .when(pl.col("kind") == "negation")
        .then(pl.format("one side negates the other (content containment {})", pl.col("_containment").round(2)))
        .when(pl.col("kind") == "antonym")
        .then(pl.format("opposite words ({}) in otherwise matching statements", pl.col("_anto_words").list.join(",")))
        .when(pl.col("kind") == "change")
        .then(pl.format("change marker with overlapping content (overlap {})", pl.col("_overlap").round(2)))
        .alias("evidence"),
    )
    return f.drop([c for c in f.columns if c.startswith("_")])
