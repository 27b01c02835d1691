"""Helpers over polars frames shared by the stages."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl


def namespace_passes(frame: pl.DataFrame, rows_per_pass: int) -> Iterator[pl.DataFrame]:
    """The frame in passes of whole namespaces holding about ``rows_per_pass`` rows each (a namespace
    larger than that is one pass), in the frame's order of namespaces. Work that never crosses a
    namespace gives the same result pass by pass as at once, with memory bounded by the pass."""
    if frame.height == 0:
        yield frame
        return
    sizes = frame.group_by("namespace", maintain_order=True).len()
    passes = _pass_numbers(sizes, rows_per_pass)
    for index in passes.unique(maintain_order=True):
        yield frame.filter(pl.col("namespace").is_in(sizes.filter(passes == index)["namespace"].implode()))


def doc_ranges(sizes: pl.DataFrame, rows_per_pass: int) -> list[tuple[int, int]]:
    """namespace_passes' passes as ranges (first, last) of row numbers, for rows numbered from 0 in
    namespace order, from the rows of each namespace (columns namespace, len) in that order."""
    if sizes.height == 0:
        return []
    lengths = (sizes.with_columns(_pass_numbers(sizes, rows_per_pass).alias("pass"))
               .group_by("pass", maintain_order=True).agg(pl.col("len").sum())["len"])
    return [(end - length, end - 1) for end, length in zip(lengths.cum_sum().to_list(), lengths.to_list())]


def _pass_numbers(sizes: pl.DataFrame, rows_per_pass: int) -> pl.Series:
    return (sizes["len"].cum_sum() - 1) // max(rows_per_pass, 1)
