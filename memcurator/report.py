"""`memcurator report`: a self-contained HTML page of the store-health history, one chart per series.

Reads ``mart.store_health`` from the published snapshot, sums (or weights by the active set) the
namespaces per night, and draws each series as an inline SVG line chart: no scripts, no network,
no plotting dependency. A trend line per series says whether the store converges or compounds
over the last nights. Counts and rates only: no memory content is copied into the page.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import polars as pl

from memcurator import store

# (column, title, how namespaces combine, "good" direction for the trend word)
SERIES = (
    ("entries", "Entries written so far", "sum", None),
    ("active", "Active set", "sum", None),
    ("archived", "Archived", "sum", None),
    ("contested", "Contested entries", "sum", "down"),
    ("writes_in", "Writes in (per night)", "sum", None),
    ("retired_tonight", "Entries retired (per night)", "sum", None),
    ("duplicate_rate", "Near-duplicate rate of the active set", "weighted", "down"),
    ("contested_rate", "Contested per active entry", "weighted", "down"),
    ("under_noise_floor_share", "Share under the importance noise floor", "weighted_entries", None),
    ("explicit_link_ratio", "Explicit-link ratio of conflicting pairs", "weighted", "up"),
    ("injected_age_median_days", "Median age of injected entries (days)", "weighted_injections", "down"),
    ("injected_age_p90_days", "p90 age of injected entries (days)", "weighted_injections", "down"),
    ("injected_old_unverified_share", "Injected, older than 90 days and unverified", "weighted_injections", "down"),
    ("secrets_redacted", "Events with redacted credentials (so far)", "sum", None),
)
WEIGHTS = {"weighted": "active", "weighted_entries": "entries", "weighted_injections": "injections"}


def nightly_series(conn: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per night: counts summed over namespaces, rates weighted by what they are rates of."""
    parts = []
    for column, _, how, _ in SERIES:
        if how == "sum":
            parts.append(f"sum({column})::double as {column}")
        else:
            weight = WEIGHTS[how]
            parts.append(f"(sum({column} * {weight}) filter (where {column} is not null) / "
                         f"nullif(sum({weight}) filter (where {column} is not null), 0))::double as {column}")
    return conn.execute(f"select night, count(*) as namespaces, {', '.join(parts)} "
                        "from mart.store_health group by night order by night").pl()


def _trend(values: list[float], good: str | None) -> str:
    points = [v for v in values if v is not None][-7:]
    if len(points) < 2:
        return "one night so far"
    change = points[-1] - points[0]
    scale = max(abs(points[0]), abs(points[-1]), 1e-9)
    if abs(change) / scale < 0.02:
        return "flat over the last nights"
    direction = "rising" if change > 0 else "falling"
    if good is None:
        return f"{direction} over the last {len(points)} nights"
    verdict = "converging" if (direction == "falling") == (good == "down") else "compounding"
    return f"{direction} over the last {len(points)} nights: {verdict}"


def _svg(nights: list, values: list, width: int = 420, height: int = 150) -> str:
    pad_l, pad_r, pad_t, pad_b = 48, 10, 10, 24
    pts = [(i, v) for i, v in enumerate(values) if v is not None]
    if not pts:
        return '<p class="none">no data</p>'
    lo, hi = min(0.0, min(v for _, v in pts)), max(v for _, v in pts)
    hi = hi if hi > lo else lo + 1
    span = max(len(values) - 1, 1)

    coords = [(i, v, pad_l + (width - pad_l - pad_r) * i / span,
               pad_t + (height - pad_t - pad_b) * (1 - (v - lo) / (hi - lo))) for i, v in pts]
    line = " ".join(f"{x:.1f},{y:.1f}" for _, _, x, y in coords)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"><title>'
                   f'{html.escape(str(nights[i]))}: {v:,.4g}</title></circle>' for i, v, x, y in coords)
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img">'
            f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" class="axis"/>'
            f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" class="axis"/>'
            f'<text x="{pad_l - 4}" y="{pad_t + 8}" text-anchor="end">{hi:,.3g}</text>'
            f'<text x="{pad_l - 4}" y="{height - pad_b}" text-anchor="end">{lo:,.3g}</text>'
            f'<text x="{pad_l}" y="{height - 6}">{html.escape(str(nights[0]))}</text>'
            f'<text x="{width - pad_r}" y="{height - 6}" text-anchor="end">{html.escape(str(nights[-1]))}</text>'
            f'<polyline points="{line}"/>{dots}</svg>')


STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}h1{font-size:20px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:16px}
.card{border:1px solid #ddd;border-radius:6px;padding:10px}.card h2{font-size:14px;margin:0 0 4px}
.trend{color:#555;font-size:12px;margin:0 0 6px}.axis{stroke:#999}polyline{fill:none;stroke:#2a6fdb;stroke-width:2}
circle{fill:#2a6fdb}text{font-size:10px;fill:#555}table{border-collapse:collapse}td,th{padding:2px 8px;
border-bottom:1px solid #eee;text-align:right}th:first-child,td:first-child{text-align:left}"""


def render(frame: pl.DataFrame, latest: pl.DataFrame, generated: datetime) -> str:
    nights = frame["night"].to_list()
    cards = []
    for column, title, _, good in SERIES:
        values = frame[column].to_list()
        last = next((v for v in reversed(values) if v is not None), None)
        shown = "n/a" if last is None else f"{last:,.4g}"
        cards.append(f'<div class="card" id="{column}"><h2>{html.escape(title)}: {shown}</h2>'
                     f'<p class="trend">{html.escape(_trend(values, good))}</p>{_svg(nights, values)}</div>')
    head = "".join(f"<th>{html.escape(c)}</th>" for c in latest.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape('' if v is None else f'{v:,.4g}' if isinstance(v, float) else str(v))}</td>"
                                    for v in row) + "</tr>" for row in latest.iter_rows())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>memcurator store health</title>"
            f"<style>{STYLE}</style></head><body><h1>Store health: {len(nights)} nights, "
            f"{html.escape(str(nights[0]))} to {html.escape(str(nights[-1]))}</h1>"
            f"<p>From <code>mart.store_health</code>; counts are summed over namespaces, rates weighted by the "
            f"active set (injected ages by injections). Generated {generated:%Y-%m-%d %H:%M} UTC.</p>"
            f"<div class='grid'>{''.join(cards)}</div><h2>Latest night, largest namespaces</h2>"
            f"<table><tr>{head}</tr>{rows}</table></body></html>")


def write_report(store_path: Path, out: Path, generated: datetime | None = None) -> Path:
    with store.connect(store_path, read_only=True) as conn:
        frame = nightly_series(conn)
        if frame.height == 0:
            raise ValueError("mart.store_health is empty: run a night first")
        latest = conn.execute(
            """select namespace, entries, active, contested, round(duplicate_rate, 4) as duplicate_rate,
                      round(explicit_link_ratio, 4) as explicit_link_ratio, injected_age_median_days
               from mart.store_health where night = (select max(night) from mart.store_health)
               order by entries desc, namespace limit 20""").pl()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(render(frame, latest, generated or datetime.now(timezone.utc)))
    tmp.replace(out)
    return out
