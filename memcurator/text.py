"""Text normalisation and shingling, vectorised over whole columns."""

from __future__ import annotations

import polars as pl

WORD = r"\w+"
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


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
