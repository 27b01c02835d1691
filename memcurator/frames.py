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
    passes = pass_numbers(sizes["len"], rows_per_pass)
    for index in passes.unique(maintain_order=True):
        yield frame.filter(pl.col("namespace").is_in(sizes.filter(passes == index)["namespace"].implode()))


def pass_numbers(sizes: pl.Series, rows_per_pass: int) -> pl.Series:
    """The pass of each namespace in ``namespace_passes``, from the namespaces' row counts in their order."""
    return (sizes.cum_sum() - 1) // max(rows_per_pass, 1)
