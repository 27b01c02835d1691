"""Dispatch `memcurator eval DATASET PATH...` to the dataset's evaluation."""

from __future__ import annotations

from pathlib import Path

from memcurator.eval.core import EvalResult

DATASETS = ["locomo"]

# The suite `make eval` runs: (dataset, files relative to ../shared/data).
SUITE: list[tuple[str, list[str]]] = [
    ("locomo", ["locomo/locomo_dev.json.gz"]),
]


def evaluate(dataset: str, paths: list[Path]) -> EvalResult:
    if dataset == "locomo":
        from memcurator.eval import locomo

        return locomo.run(paths)
    raise ValueError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
