"""The synthetic evaluation's recall measure and the floors on its variants (no ../shared needed)."""

from __future__ import annotations

import json

from memcurator.eval import synthetic
from memcurator.eval.report import check_floors


def test_folding_restatements_frees_the_places_one_lesson_took():
    """Before any curator decision, curated recall without folding gives a restated lesson most of the top
    5 (the raw store's share); folded, the lesson is still found and takes one place."""
    result = synthetic.run(writes=1_500, namespaces=3, days=30).as_dict()
    folded = result["variants"]["no curator decisions"]
    unfolded = result["variants"]["no curator decisions, fold_restatements off"]
    assert result["raw"]["top5_restated_share"] >= 0.5
    assert unfolded["top5_restated_share"] >= 0.5
    assert folded["top5_restated_share"] <= 0.2
    assert folded["top5_lesson_found"] == unfolded["top5_lesson_found"] == 1.0
    assert result["curated"]["top5_restated_share"] <= 0.2


def test_floors_on_a_variant_are_checked(tmp_path):
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"d.variants.no curator decisions.share": {"max": 0.1},
                                  "d.variants.gone.share": {"max": 0.1}, "d.curated.found": {"min": 0.9}}))
    results = [{"dataset": "d", "raw": {}, "curated": {"found": 0.95},
                "variants": {"no curator decisions": {"share": 0.3}}}]
    assert check_floors(results, floors) == ["d.variants.no curator decisions.share = 0.3 > ceiling 0.1",
                                             "d.variants.gone.share: metric missing"]
