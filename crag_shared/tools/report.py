"""`crag report`: one self-contained HTML page of what CRAG decided over many queries.

Plots are inline SVG drawn by matplotlib (text kept as text, so a plot is a few tens of kilobytes and
searchable); the table is sorted and filtered by a few lines of inline script, and each of its queries
opens to its card (`crag_shared.summary.verdict_html`: every retrieved passage as judged, the strips, the
fallbacks), the passages holding an answer marked where the records say. Nothing is fetched: the page
opens from disk, offline, and its policy allows no form to be sent.
"""

from __future__ import annotations

import io
import math
import os
import secrets
from collections import Counter
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from ..summary import COLOURS, verdict_html
from .report_data import BORDERLINE_ROWS, Row, common_thresholds, latency, read_rows, tradeoff_curve

__all__ = ["build_report", "write_report"]

ACTIONS = ("correct", "ambiguous", "incorrect", "unjudged", "failed")

STYLE = """body{font-family:system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d0d7de;padding:3px 6px;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none}.num{text-align:right}.cards span{display:inline-block;
margin:0 18px 8px 0}.plot svg{max-width:100%;height:auto}.crag-verdict table{margin:6px 0}
.crag-verdict caption{text-align:left;font-weight:bold}.crag-verdict th{cursor:default}
tr.crag-answer{background:#dafbe1}
"""

SCRIPT = """
const table = document.getElementById('borderline');
const body = table.tBodies[0];
const filter = document.getElementById('filter');
const action = document.getElementById('action');
const refused = document.getElementById('refused');
function apply() {
  const text = filter.value.toLowerCase();
  let shown = 0;
  for (const row of body.rows) {
    const ok = (!text || row.textContent.toLowerCase().includes(text))
      && (!action.value || row.dataset.action === action.value)
      && (!refused || !refused.checked || row.dataset.refused === '1');
    row.hidden = !ok;
    shown += ok ? 1 : 0;
  }
  document.getElementById('shown').textContent = shown;
}
filter.addEventListener('input', apply);
action.addEventListener('change', apply);
if (refused) refused.addEventListener('change', apply);
for (const [index, header] of [...table.tHead.rows[0].cells].entries()) {
  header.addEventListener('click', () => {
    const up = header.dataset.order !== 'up';
    for (const cell of table.tHead.rows[0].cells) delete cell.dataset.order;
    header.dataset.order = up ? 'up' : 'down';
    const key = row => row.cells[index].dataset.value ?? row.cells[index].textContent;
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      const order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return up ? order : -order;
    });
    body.append(...rows);
  });
}
apply();
"""


def _axis(width: float, height: float) -> tuple[Any, Any]:
    """A figure and its axis, without pyplot: no backend is chosen and no figure is left open in the caller's
    process (a notebook keeps its own backend)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _action_mix(rows: Sequence[Row]) -> str:
    counts = Counter(r.action for r in rows)
    shown = [a for a in ACTIONS if counts[a]][::-1]
    figure, axis = _axis(6, 0.5 + 0.4 * len(shown))
    axis.barh(shown, [counts[a] for a in shown], color=[COLOURS.get(a, "#57606a") for a in shown])
    for y, action in enumerate(shown):
        axis.text(counts[action], y, f" {counts[action]} ({counts[action] / len(rows):.0%})", va="center")
    axis.set_xlabel("queries")
    axis.set_xlim(0, max(counts.values()) * 1.25)
    return _svg(figure)


def _histograms(rows: Sequence[Row], thresholds: tuple[float, float] | None) -> str:
    figure, axis = _axis(8, 3.6)
    bins = [i / 20 - 1 for i in range(41)]
    for action in ("correct", "ambiguous", "incorrect"):
        best = [r.best for r in rows if r.action == action and r.best is not None]
        if best:
            axis.hist(best, bins=bins, alpha=0.6, color=COLOURS[action], label=f"{action} ({len(best)})")
    for value, name, style in zip(thresholds or (), ("upper", "lower"), ("-", "--")):
        axis.axvline(value, color="black", linestyle=style, label=f"{name} threshold {value:+.2f}")
    axis.set_xlabel("best passage score of the query")
    axis.set_ylabel("queries")
    axis.legend(fontsize=8)
    return _svg(figure)


def _tradeoff(curve: Sequence[tuple[float, float, float, float]], thresholds: tuple[float, float] | None) -> str:
    figure, axis = _axis(8, 3.6)
    uppers = [c[0] for c in curve]
    for column, name, colour in ((1, "questions keeping their answer", COLOURS["correct"]),
                                 (2, "near misses passed on", COLOURS["ambiguous"]),
                                 (3, "other negatives passed on", COLOURS["incorrect"])):
        values = [c[column] * 100 for c in curve]
        if not all(math.isnan(v) for v in values):
            axis.plot(uppers, values, color=colour, label=name)
    if thresholds:
        axis.axvline(thresholds[0], color="black", label=f"upper threshold {thresholds[0]:+.2f}")
    axis.set_xlabel("upper threshold")
    axis.set_ylabel("% of queries")
    axis.legend(fontsize=8)
    return _svg(figure)


def _plots(rows: Sequence[Row], thresholds: tuple[float, float] | None) -> list[tuple[str, str]]:
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "crag"}):  # text as text; stable ids
        plots = [("The action mix", _action_mix(rows)),
                 ("Best scores per action, with the thresholds", _histograms(rows, thresholds))]
        curve = tradeoff_curve(rows)
        if curve is not None:
            plots.append(("Keep or pass on: the trade-off of the upper threshold (labelled queries)",
                          _tradeoff(curve, thresholds)))
    return plots


def _counts_table(title: str, counts: Counter[str], total: int) -> str:
    if not counts:
        return f"<h2>{escape(title)}</h2><p>None.</p>"
    rows = "".join(f"<tr><td>{escape(k)}</td><td class='num'>{n}</td><td class='num'>{n / total:.1%}</td></tr>"
                   for k, n in counts.most_common(30))
    return (f"<h2>{escape(title)}</h2><table><thead><tr><th>reason</th><th>queries</th><th>share</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _latency_table(rows: Sequence[Row]) -> str:
    stages = latency(rows)
    if not stages:
        return "<h2>Latency per stage</h2><p>No timings in these records.</p>"
    body = "".join(f"<tr><td>{escape(s)}</td><td class='num'>{n}</td><td class='num'>{p50:.1f}</td>"
                   f"<td class='num'>{p95:.1f}</td></tr>" for s, (n, p50, p95) in stages.items())
    return ("<h2>Latency per stage (ms)</h2><table><thead><tr><th>stage</th><th>queries</th><th>p50</th>"
            f"<th>p95</th></tr></thead><tbody>{body}</tbody></table>")


def _answer(row: Row) -> str:
    if row.labels is None:
        return "<td></td>"
    if row.refused:
        return "<td data-value='2' style='color:#cf222e'>refused</td>"
    return "<td data-value='1'>kept</td>" if any(row.labels) else "<td data-value='0'>none retrieved</td>"


def _table_row(row: Row) -> str:
    best = f"{row.best:+.3f}" if row.best is not None else "–"
    total = row.stages.get("result")
    margin = f"<td class='num' data-value='{row.margin:.6f}'>{row.margin:.3f}</td>" if math.isfinite(row.margin) else (
        "<td class='num' data-value='1e9'>–</td>")
    card = verdict_html(row.summary, row.labels) if row.summary is not None else ""
    return (f"<tr data-action='{escape(row.action)}' data-refused='{int(row.refused)}'><td>{escape(row.id)}</td>"
            f"<td>{escape(row.question)}</td><td>{escape(row.action)}</td>"
            f"<td class='num' data-value='{row.best}'>{best}</td>{margin}<td>{escape(row.abstention or '')}</td>"
            f"<td>{'yes' if row.web else ''}</td>{_answer(row)}"
            f"<td class='num' data-value='{total if total is not None else -1}'>"
            f"{'' if total is None else f'{total:.1f}'}</td>"
            f"<td><details><summary>passages and verdict</summary>{card}</details></td></tr>")


def _borderline(rows: Sequence[Row]) -> str:
    listed = sorted((r for r in rows if r.summary is not None), key=lambda r: (r.margin, r.number))
    near = sum(math.isfinite(r.margin) for r in listed)
    labelled = any(r.labels is not None for r in rows)
    refusals = sum(r.refused for r in rows)
    options = "".join(f"<option value='{a}'>{a}</option>" for a in ACTIONS if any(r.action == a for r in listed))
    answers = (f" <label><input type='checkbox' id='refused'> only the queries whose answer-bearing passage was "
               f"refused</label> ({refusals} in all)") if labelled else ""
    return (f"<h2>Borderline queries</h2><p>The queries whose best score lies nearest a threshold (at most "
            f"{BORDERLINE_ROWS})" + (f" and those whose answer-bearing passage was refused (at most "
                                     f"{BORDERLINE_ROWS})" if labelled else "") +
            f": {len(listed)} queries, {near} of them near a threshold. Each opens to its card: every retrieved "
            "passage with its score, the judge's reason and whether it was kept. Click a column to sort. Filter: "
            "<input id='filter' placeholder='text'> "
            f"<select id='action'><option value=''>every action</option>{options}</select>{answers} "
            f"(<span id='shown'>{len(listed)}</span> shown)</p>"
            "<table id='borderline'><thead><tr><th>id</th><th>question</th><th>action</th><th>best score</th>"
            "<th>to threshold</th><th>abstention</th><th>web</th><th>answer</th><th>total ms</th><th>card</th>"
            f"</tr></thead><tbody>{''.join(_table_row(r) for r in listed)}</tbody></table>")


def build_report(rows: Sequence[Row], title: str) -> str:
    """The whole page."""
    thresholds = common_thresholds(rows)
    counts = Counter(r.action for r in rows)
    abstained = Counter(r.abstention for r in rows if r.abstention)
    fallbacks = Counter(f for r in rows for f in r.fallbacks)
    faults = sum(n for f, n in fallbacks.items() if not f.endswith("(the setup, not a fault)"))
    failed = Counter(r.error or "" for r in rows if r.error is not None)
    web = sum(r.web for r in rows)
    cards = [f"<span><b>{len(rows)}</b> queries</span>"]
    cards += [f"<span style='color:{COLOURS.get(a, '#57606a')}'><b>{counts[a]}</b> {a}</span>"
              for a in ACTIONS if counts[a]]
    cards += [f"<span><b>{sum(abstained.values())}</b> abstained</span>", f"<span><b>{web}</b> used the web</span>",
              f"<span><b>{faults}</b> fallbacks on a fault</span>"]
    if thresholds:
        cards.append(f"<span>thresholds: upper <b>{thresholds[0]:+.2f}</b>, lower <b>{thresholds[1]:+.2f}</b></span>")
    plots = "".join(f"<h2>{escape(name)}</h2><div class='plot'>{svg}</div>" for name, svg in _plots(rows, thresholds))
    sections = [_counts_table("Why CRAG abstained", abstained, len(rows)),
                _counts_table("Fallbacks", fallbacks, len(rows)),
                f"<h2>Web</h2><p>{web} of {len(rows)} queries searched the web ({web / len(rows):.1%}).</p>",
                _latency_table(rows)]
    if failed:
        sections.append(_counts_table("Failed queries", failed, len(rows)))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            "content='width=device-width'><meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; form-action 'none'\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"
            f"<div class='cards'>{''.join(cards)}</div>{plots}{''.join(sections)}{_borderline(rows)}"
            f"<script>{SCRIPT}</script></body></html>")


def write_report(results: str | Path, out: str | Path, title: str | None = None) -> int:
    """Read `results` (JSONL) and write the report to `out`; returns the number of queries. The page is
    written beside `out` and moved over it whole, so a failure leaves any earlier report as it was; text
    UTF-8 cannot hold (a lone surrogate a record kept) is written as its escape."""
    rows = read_rows(results)
    page = build_report(rows, title or f"CRAG report: {Path(results).name}").encode("utf-8", "backslashreplace")
    replace_file(Path(out), page)
    return len(rows)


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to a new file beside `path`, then rename it over `path` in one step."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "xb") as sink:  # created with the usual permissions (umask), never an existing file
            sink.write(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
