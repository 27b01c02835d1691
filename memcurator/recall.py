"""recall(): relevance to the query (BM25) combined with the curation score, with banners.

One BM25 index per (store file, namespace) over every entry is built once and cached; the raw
mode searches every entry, the curated mode masks the same index to the recall view, so raw and
curated differ only by curation. How relevance and curation combine is a measured choice
(docs/evaluation.md): ``combine`` selects it. In curated mode the near-duplicates of a hit that no
curator has merged yet are folded into it (``fold_restatements``): one lesson written forty times is
recalled once, saying so, not as forty confirmations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path

import bm25s
import numpy as np
import polars as pl
import Stemmer

from memcurator import sql, store

COMBINES = ("relevance", "blend")


@dataclass(frozen=True)
class RecallSettings:
    combine: str = "blend"
    curation_weight: float = 0.1   # weight of the normalised curation score against normalised relevance
    session_weight: float = 1.0    # multiplier on session-tier relevance (0.8 cost LoCoMo 0.01 R@5: docs/evaluation.md)
    candidates: int = 50           # relevance candidates re-ranked by the combination
    min_relevance: float = 0.0     # abstain (return nothing) below this BM25 relevance; off by default, since
                                   # on LoCoMo unanswerable questions score higher than answerable ones (AUC 0.40)
    fold_restatements: bool = True  # curated mode: a hit's unmerged near-duplicates fold into it (_fold)


@dataclass
class Hit:
    entry_id: str
    text: str
    rank: int
    relevance: float
    score: float
    tier: str
    cls: str
    banners: list[str] = field(default_factory=list)
    restatements: list[str] = field(default_factory=list)  # near-duplicates folded into this hit (curated mode)


@dataclass
class NamespaceIndex:
    entries: pl.DataFrame          # every entry of the namespace plus approved principles: entry_id, text, class, is_principle
    retriever: bm25s.BM25 | None
    recallable: pl.DataFrame       # recall view rows: entry_id, tier, score, banners, class, ..., cluster_id

    @property
    def size(self) -> int:
        return self.entries.height

    # The masks and the top score are the index's, not the query's: computed once per cached index
    # (made for each query, they were 5 of 13 ms of a warm recall on a 50k-entry namespace)
    @cached_property
    def raw_mask(self) -> np.ndarray:
        """1 for the log's entries, 0 for approved principles (curation products, not entries)."""
        return (~self.entries["is_principle"]).to_numpy().astype(np.float32)

    @cached_property
    def view_rows(self) -> np.ndarray:
        """Each entry's row in ``recallable`` (-1: not in the recall view): hits gather their rows
        instead of joining the view."""
        rows = self.entries.select("entry_id").join(self.recallable.select("entry_id").with_row_index("row"),
                                                    on="entry_id", how="left", maintain_order="left")["row"]
        return rows.cast(pl.Int64).fill_null(-1).to_numpy()

    @cached_property
    def curated_mask(self) -> np.ndarray:
        """1 for the entries in the recall view."""
        return (self.view_rows >= 0).astype(np.float32)

    @cached_property
    def top_score(self) -> float:
        return max(float(self.recallable["score"].max() or 0.0), 1e-9)


# English stemming: +0.05 recall@5 and +0.045 MRR on LoCoMo for raw and curated alike (docs/evaluation.md)
_STEMMER = Stemmer.Stemmer("english")


def _tokenize(texts: list[str]):
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER.stemWords, show_progress=False)


def _build(entries: pl.DataFrame) -> bm25s.BM25 | None:
    if entries.height == 0:
        return None
    retriever = bm25s.BM25()
    retriever.index(_tokenize(entries["text"].to_list()), show_progress=False)
    return retriever


@lru_cache(maxsize=64)
def _namespace_index(path: str, mtime_ns: int, namespace: str) -> NamespaceIndex:
    with store.connect(path, read_only=True) as conn:
        entries = conn.execute(
            "select entry_id, text, class, false as is_principle from core.entries where namespace = ? "
            "union all "
            "select principle_id, text, 'principle', true from core.principle_proposals "
            "where namespace = ? and status = 'approved' order by is_principle, entry_id", [namespace, namespace]).pl()
        # cluster_id: the entry's near-duplicate cluster, unless a curator rejected or unmerged its
        # proposal (they keep its members apart); an approved one's members are no longer recallable
        recallable = conn.execute(
            """select r.entry_id, r.tier, r.score, r.banners, r.class, r.conflict_with, r.is_likely_current,
                      r.tags, r.valid_from, c.cluster_id,
                      count(c.cluster_id) over (partition by c.cluster_id) as cluster_recallable
               from mart.recall_view as r
               left join core.near_duplicate_clusters as c
                 on c.namespace = r.namespace and c.entry_id = r.entry_id
                and not exists (select 1 from core.principle_proposals as p
                                where p.namespace = c.namespace and p.cluster_id = c.cluster_id
                                  and p.status in ('rejected', 'unmerged'))
               where r.namespace = ?""", [namespace]).pl()
    return NamespaceIndex(entries, _build(entries), recallable)


@lru_cache(maxsize=16)
def _asof_index(path: str, mtime_ns: int, namespace: str, at: datetime) -> NamespaceIndex:
    with store.connect(path, read_only=True) as conn:
        rows = conn.execute(sql.load("recall_asof"), {"namespace": namespace, "at": at}).pl().sort("entry_id")
    meta = rows.select("entry_id", "tier", "score", "banners", "class").with_columns(
        pl.lit([], dtype=pl.List(pl.String)).alias("conflict_with"), pl.lit(True).alias("is_likely_current"),
        pl.lit([], dtype=pl.List(pl.String)).alias("tags"), pl.lit(None, dtype=pl.Datetime("us")).alias("valid_from"),
        pl.lit(None, dtype=pl.String).alias("cluster_id"), pl.lit(0, dtype=pl.Int64).alias("cluster_recallable"))
    return NamespaceIndex(rows.select("entry_id", "text", "class", pl.lit(False).alias("is_principle")), _build(rows), meta)


def load_index(store_path: Path | str, namespace: str, as_of: datetime | None = None) -> NamespaceIndex:
    path = str(Path(store_path).resolve())
    mtime = Path(path).stat().st_mtime_ns
    return _asof_index(path, mtime, namespace, as_of) if as_of else _namespace_index(path, mtime, namespace)


def recall(query: str, namespace: str, store_path: Path | str, k: int = 5, as_of: datetime | None = None,
           mode: str = "curated", settings: RecallSettings = RecallSettings()) -> list[Hit]:
    """Top-k entries of one namespace for the query. Nothing from another namespace is ever loaded."""
    index = load_index(store_path, namespace, as_of)
    return search(index, query, k, "raw" if as_of else mode, settings)


def search(index: NamespaceIndex, query: str, k: int, mode: str, settings: RecallSettings) -> list[Hit]:
    if index.retriever is None or k <= 0:
        return []
    tokens = _tokenize([query])
    if not tokens.ids or not tokens.ids[0]:
        return []
    n = index.size
    mask = None
    if mode == "raw":
        mask = index.raw_mask
    if mode == "curated":
        mask = index.curated_mask
        if not mask.any():
            return []
    want = min(n, max(k, settings.candidates))
    while True:
        frame, complete = _candidates(index, tokens, want, mask, mode, settings)
        if frame is None:
            return []
        if not (mode == "curated" and settings.fold_restatements):
            rows = list(frame.head(k).iter_rows(named=True))
            break
        rows = _fold(list(frame.iter_rows(named=True)))
        if len(rows) >= k or complete:
            rows = rows[:k]
            break
        # the candidates folded into fewer than k hits (a lesson written more often than there are
        # candidates): more of them, so the entries ranked after them are not lost
        want = min(n, want * 4)
    if mode == "curated":
        rows = _current_side_first(_later_validity_first(rows))
    return [Hit(row["entry_id"], row["text"], i, row["relevance"], row["score"], row["tier"], row["class"],
                list(row["banners"] or []) + _fold_banner(row), row.get("folded", []))
            for i, row in enumerate(rows, start=1)]


def _candidates(index: NamespaceIndex, tokens, want: int, mask, mode: str,
                settings: RecallSettings) -> tuple[pl.DataFrame | None, bool]:
    """The ``want`` most relevant entries, ranked as ``mode`` and ``settings`` rank them (None: none is
    relevant), and whether they are every relevant entry there is."""
    docs, scores = index.retriever.retrieve(tokens, k=want, show_progress=False, weight_mask=mask, n_threads=1)
    docs, scores = docs[0], scores[0]
    keep = (scores > 0) & (scores >= settings.min_relevance)
    complete = want >= index.size or not keep.all()  # the scores come sorted: the rest are below
    docs, scores = docs[keep], scores[keep]
    if len(docs) == 0:
        return None, complete
    frame = index.entries[docs].drop("is_principle").with_columns(pl.Series("relevance", scores.astype(np.float64)))
    if mode == "raw":
        frame = frame.with_columns(pl.lit("raw").alias("tier"), pl.lit(0.0).alias("score"),
                                   pl.lit([], dtype=pl.List(pl.String)).alias("banners"))
    else:
        at = index.view_rows[docs]  # the hits' rows of the recall view (the mask leaves out the others)
        frame = pl.concat([frame.drop("class").filter(pl.Series(at >= 0)),
                           index.recallable.drop("entry_id")[at[at >= 0]]], how="horizontal")
    if mode == "curated" and settings.combine == "blend":
        rel = pl.col("relevance") * pl.when(pl.col("tier") == "session").then(settings.session_weight).otherwise(1.0)
        frame = frame.with_columns(
            (rel / rel.max() + settings.curation_weight * pl.col("score") / index.top_score).alias("combined"))
        frame = frame.sort(["combined", "relevance", "entry_id"], descending=[True, True, False])
    else:
        frame = frame.sort(["relevance", "entry_id"], descending=[True, False])
    return frame, complete


def _fold(rows: list[dict]) -> list[dict]:
    """The ranked candidates with each near-duplicate folded into the best-ranked member of its cluster
    (in ``folded``), so that a restated lesson takes one place, not one per restatement. An entry in an
    open conflict is never folded (its conflict stays in view), nor one a curator keeps apart
    (``cluster_id`` null), nor a fact valid from another time than the member it would fold into (a
    version of the fact, not a restatement: situatedqa's current and previous answers), nor an entry
    of the other tier (an active entry never hides under session material)."""
    kept: list[dict] = []
    first: dict[tuple, dict] = {}
    for row in rows:
        cluster = row.get("cluster_id")
        key = (cluster, row.get("valid_from"), row.get("tier"))
        into = first.get(key) if cluster is not None else None
        if into is not None and not row["conflict_with"]:
            into["folded"].append(row["entry_id"])
            continue
        row = row | {"folded": []}
        if cluster is not None and key not in first:
            first[key] = row
        kept.append(row)
    return kept


SHOWN_RESTATEMENTS = 3  # the folded entries a banner names


def _fold_banner(row: dict) -> list[str]:
    folded = row.get("folded") or []
    if not folded:
        return []
    more = f" and {len(folded) - SHOWN_RESTATEMENTS} more" if len(folded) > SHOWN_RESTATEMENTS else ""
    return [f"{row['cluster_recallable']} recallable entries restate one lesson, not yet merged "
            f"(cluster {row['cluster_id']}): recalled once, with {', '.join(folded[:SHOWN_RESTATEMENTS])}{more} "
            "folded into it"]


def _later_validity_first(rows: list[dict]) -> list[dict]:
    """Facts about the same subject (same non-empty tag set) that state their validity: the one
    valid from later takes the best position the group holds (later validity, not later writing)."""
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        if row.get("tags") and row.get("valid_from") is not None:
            groups.setdefault(tuple(sorted(row["tags"])), []).append(i)
    out = list(rows)
    for positions in groups.values():
        if len(positions) > 1:
            members = sorted((rows[i] for i in positions), key=lambda r: r["valid_from"], reverse=True)
            for position, member in zip(positions, members):
                out[position] = member
    return out


def _current_side_first(rows: list[dict]) -> list[dict]:
    """Within a conflict, the side more likely to be current comes first: a stale side is moved
    just below the first later hit it conflicts with that is itself likely current."""
    out = list(rows)
    moved: set[str] = set()
    i = 0
    while i < len(out):
        row = out[i]
        if not row.get("is_likely_current", True) and row["entry_id"] not in moved:
            partners = set(row.get("conflict_with") or [])
            later = next((j for j in range(i + 1, len(out))
                          if out[j]["entry_id"] in partners and out[j].get("is_likely_current", True)), None)
            if later is not None:
                moved.add(row["entry_id"])  # each row moves at most once: two stale sides cannot swap forever
                out.insert(later, out.pop(i))
                continue
        i += 1
    return out
