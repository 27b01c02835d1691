"""Dispatch `memcurator eval DATASET PATH...` to the dataset's evaluation."""

from __future__ import annotations

from pathlib import Path

from memcurator.eval.core import EvalResult

DATASETS = ["locomo", "situatedqa", "sick", "msrp", "sts", "tau-bench", "synthetic"]

# The suite `make eval` runs: (dataset, files relative to ../shared/data).
SUITE: list[tuple[str, list[str]]] = [
    ("locomo", ["locomo/locomo_dev.json.gz"]),
    ("situatedqa", ["situatedqa-temporal/raw_data_temp.train.jsonl.gz", "situatedqa-temporal/qa_data_temp.train.jsonl.gz"]),
    ("sick", ["sick2014/SICK_train.txt", "sick2014/SICK_trial.txt"]),
    ("msrp", ["msrp/msr-para-train.tsv", "msrp/msr-para-val.tsv"]),
    ("sts", ["semeval-sts/2016/answer-answer.test.tsv", "semeval-sts/2016/headlines.test.tsv",
             "semeval-sts/2016/plagiarism.test.tsv", "semeval-sts/2016/postediting.test.tsv",
             "semeval-sts/2016/question-question.test.tsv"]),
    ("tau-bench", ["tau-bench-trajectories/gpt-4o-airline.dev.json.gz"]),
    ("synthetic", []),
]


def evaluate(dataset: str, paths: list[Path]) -> EvalResult:
    if dataset == "locomo":
        from memcurator.eval import locomo

        return locomo.run(paths)
    if dataset == "situatedqa":
        from memcurator.eval import situatedqa

        return situatedqa.run(paths)
    if dataset == "tau-bench":
        from memcurator.eval import taubench

        return taubench.run(paths)
    if dataset == "synthetic":
        from memcurator.eval import synthetic

        return synthetic.run(paths)
    if dataset == "sick":
        from memcurator.eval import pairs

        return pairs.run_sick(paths)
    if dataset in ("msrp", "sts"):
        from memcurator.eval import pairs

        frame = pairs.load_msrp(paths) if dataset == "msrp" else pairs.load_sts(paths)
        return pairs.run_near_duplicates(dataset, frame)
    raise ValueError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
