"""The demo fleet: deterministic, realistic, and its ground truth kept out of the log."""

from __future__ import annotations

import gzip
import hashlib
from datetime import date

import orjson

from memcurator import demo


def digest(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_and_end_give_identical_files(tmp_path):
    runs = []
    for k in range(2):
        demo.generate(tmp_path / f"l{k}", tmp_path / f"t{k}", writes=600, namespaces=3, days=20, seed=3,
                      end=date(2026, 11, 29))
        runs.append((digest(tmp_path / f"l{k}"), (tmp_path / f"t{k}" / "demo_truth.json").read_bytes()))
    assert runs[0] == runs[1]
    other = tmp_path / "other"
    demo.generate(other, tmp_path / "t_other", writes=600, namespaces=3, days=20, seed=4, end=date(2026, 11, 29))
    assert list(digest(other).values()) != list(runs[0][0].values())


def test_fleet_has_what_real_stores_contain(tmp_path):
    truth = demo.generate(tmp_path / "landing", tmp_path / "truth", writes=4000, namespaces=4, days=60,
                          end=date(2026, 11, 29))
    assert 3900 <= truth.writes <= 4100
    assert truth.duplicate_groups and max(len(g["entries"]) for g in truth.duplicate_groups.values()) >= 5
    assert truth.principles and truth.narrow and truth.operational and truth.stale and truth.expired
    kinds = {c["explicit"] for c in truth.contradictions}
    assert kinds == {True, False}  # corrections both with and without an explicit supersede
    assert truth.malformed_lines > 0


def test_a_landed_fleet_is_never_rewritten(tmp_path):



    home = tmp_path / "h"
    demo.generate(home / "landing", home / "truth", writes=300, namespaces=2, days=5, seed=7, end=date(2026, 11, 29))
    before = digest(home / "landing")
    # another day's demo lands beside it, with its own event ids
    demo.generate(home / "landing", home / "truth", writes=300, namespaces=2, days=5, seed=7, end=date(2026, 11, 30))
    after = digest(home / "landing")
    assert {k: v for k, v in after.items() if k in before} == before and len(after) > len(before)
    assert len(list((home / "landing").iterdir())) == 2



def test_ground_truth_never_enters_the_log(tmp_path):
    demo.generate(tmp_path / "landing", tmp_path / "truth", writes=500, namespaces=2, days=10, end=date(2026, 11, 29))
    assert not list((tmp_path / "landing").rglob("*truth*"))
    truth = orjson.loads((tmp_path / "truth" / "demo_truth.json").read_bytes())
    group_id = next(iter(truth["duplicate_groups"]))
    for path in (tmp_path / "landing").rglob("*.jsonl*"):
        body = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        assert group_id.encode() not in body
