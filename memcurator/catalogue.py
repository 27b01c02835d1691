"""The table catalogue (docs/tables.md), generated from the table declarations."""

from __future__ import annotations

# every force declares its tables on import; the catalogue lists them all
from memcurator import audit, changes, clustering, compaction, contradictions, entries, health_history, ingest, lifecycle, nearindex, ranking  # noqa: F401,E501
from memcurator.tables import TABLES


def markdown() -> str:
    out = ["# Table catalogue", "",
           "Generated from `memcurator/tables.py` by `memcurator catalogue > docs/tables.md`; a test keeps it in sync.",
           "Analysts read the published snapshot (`make sql`); the `analyst` schema has stable views over these tables.",
           ""]
    for table in sorted(TABLES.values(), key=lambda t: (["raw", "core", "mart", "work"].index(t.schema), t.name)):
        out += [f"## `{table.qualified}`", "", f"{table.grain} Key: `{', '.join(table.key) or '-'}`.", "",
                "| column | type | null | description |", "|---|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {'yes' if c.nullable else 'no'} | {c.description} |" for c in table.columns]
        out.append("")
    return "\n".join(out)
