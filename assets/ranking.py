"""Ranking stage: the curation score and the recall view agents read."""

from assets._tables import nightly_table_asset
from memcurator import ranking

core_entry_scores = nightly_table_asset(
    ranking.ENTRY_SCORES, ranking.build_entry_scores,
    [["core", "entry_lifecycle"], ["core", "entry_usage"], ["core", "principle_proposals"]], "ranking",
    stored=ranking.ENTRY_SCORE_PARTS,
)
mart_recall_view = nightly_table_asset(
    ranking.RECALL_VIEW, ranking.build_recall_view,
    [["core", "entry_lifecycle"], ["core", "entry_scores"], ["core", "entries"], ["core", "contradictions"],
     ["core", "principle_proposals"]], "ranking",
    # counted in the rows the view reads (one per row of the view): through the view, every count
    # joined the million texts (0.5-0.6 s each at 1M entries)
    {"active_set": "select count(*) from mart.recall_ranking where tier = 'active'",
     "with_failed_check_warning": "select count(*) from mart.recall_ranking where has_failed_check"},
    stored=ranking.RECALL_RANKING,
)
