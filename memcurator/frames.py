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


def namespace_ranges(sizes: pl.DataFrame, rows_per_pass: int) -> list[tuple[str, str]]:
    """The first and last namespace of each of namespace_passes' passes, from the rows of each namespace
    (columns namespace, len) in order: for a caller that reads the passes from a table one by one."""
    if sizes.height == 0:
        return []
    ranges = (sizes.with_columns(_pass_numbers(sizes, rows_per_pass).alias("pass"))
              .group_by("pass", maintain_order=True)
              .agg(pl.col("namespace").first().alias("first"), pl.col("namespace").last().alias("last")))
    return list(zip(ranges["first"].to_list(), ranges["last"].to_list()))


def _pass_numbers(sizes: pl.DataFrame, rows_per_pass: int) -> pl.Series:
    return (sizes["len"].cum_sum() - 1) // max(rows_per_pass, 1)
