"""The report in a real browser: headless Chromium (Debian's package) driven by Playwright. It opens with no
console error, every plot is visible, sorting and the filters work, each query opens to its card by passage
(the answer-bearing passage marked), the page sends no form, and a 10,000-query run gives a page under 5 MB
(its build and opening times are `crag-bench report` figures)."""

import json
import os
import re
import shutil

import pytest

from crag_shared import Corrector
from crag_shared.calibration import calibrate_qa
from crag_shared.demo import corpus
from crag_shared.evaluators import LexicalEvaluator
from crag_shared.tools.report import write_report

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium for the report check (apt-get install chromium)")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def opened(browser, page_path):
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(page_path.resolve().as_uri(), wait_until="load")
    return tab, errors


def shown_rows(tab):
    return tab.eval_on_selector_all("#borderline > tbody > tr", "rows => rows.filter(r => !r.hidden).map(r => "
                                    "[r.cells[2].textContent, r.cells[3].dataset.value, r.textContent])")


def test_the_report_opens_clean_its_plots_show_and_its_table_sorts_and_filters(browser, tmp_path):
    from benchmarks.report import large_run

    results = large_run(tmp_path / "run.jsonl", 300)
    page = tmp_path / "report.html"
    write_report(results, page)
    tab, errors = opened(browser, page)
    assert errors == []
    boxes = [tab.locator(".plot svg").nth(i).bounding_box() for i in range(tab.locator(".plot svg").count())]
    assert len(boxes) == 2 and all(b["width"] > 200 and b["height"] > 80 for b in boxes)
    tab.click("#borderline thead th:nth-child(4)")  # best score, ascending
    scores = [float(v) for _, v, _ in shown_rows(tab)]
    assert scores == sorted(scores) and len(scores) == 300
    tab.click("#borderline thead th:nth-child(4)")  # again: descending
    assert [float(v) for _, v, _ in shown_rows(tab)] == sorted(scores, reverse=True)
    tab.select_option("#action", "ambiguous")
    rows = shown_rows(tab)
    assert rows and all(action == "ambiguous" for action, _, _ in rows)
    assert tab.inner_text("#shown") == str(len(rows))
    tab.select_option("#action", "")
    tab.fill("#filter", "Mongolia")
    rows = shown_rows(tab)
    assert rows and all("Mongolia" in text for _, _, text in rows) and len(rows) < 300
    tab.click("#borderline > tbody > tr:not([hidden]) details summary")
    assert tab.locator("#borderline > tbody > tr:not([hidden]) .crag-verdict").first.is_visible()


def test_a_calibration_report_draws_its_trade_off_curve(browser, tmp_path):
    passages = corpus()
    pairs = [("Who designed the Sydney Opera House?", ["Jørn Utzon"]), ("When did the Golden Gate Bridge open?",
                                                                        ["1937"])]
    found = calibrate_qa(Corrector(LexicalEvaluator()), pairs, [[*passages]] * 2, progress=False)
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in found.records()))
    page = tmp_path / "calibration.html"
    write_report(records, page)
    tab, errors = opened(browser, page)
    assert errors == [] and tab.locator(".plot svg").count() == 3
    assert tab.locator(".plot svg").nth(2).is_visible()


def test_a_ten_thousand_query_run_gives_a_page_under_five_megabytes_that_opens(browser, tmp_path):
    from benchmarks.report import large_run

    page = tmp_path / "report.html"
    write_report(large_run(tmp_path / "run.jsonl", 10_000), page)
    assert page.stat().st_size < 5_000_000
    tab, errors = opened(browser, page)
    assert errors == [] and tab.locator("#borderline > tbody > tr").count() == 500
    assert "10000" in tab.inner_text(".cards")


def test_each_query_opens_to_its_card_by_passage_and_the_refused_answers_filter(browser, answered_run, tmp_path):
    page = tmp_path / "report.html"
    write_report(answered_run, page)
    tab, errors = opened(browser, page)
    row = tab.locator("#borderline > tbody > tr", has=tab.locator("td:first-child", has_text=re.compile("^near-miss$")))
    passages = row.locator(".crag-passages tbody tr")
    assert passages.count() == 3 and not passages.first.is_visible()  # closed until asked
    row.locator("details summary").click()
    assert all(passages.nth(i).is_visible() for i in range(3))
    answer = row.locator(".crag-passages tr.crag-answer")
    assert answer.count() == 1 and answer.is_visible()
    cells = answer.locator("td").all_inner_texts()
    assert cells[1].startswith("The bridge opened to traffic in May 1937") and cells[2].endswith("between")
    assert "does not name 'Golden Gate Bridge' in full" in cells[3] and cells[5] == "answer refused"
    bridge = tab.locator("#borderline > tbody > tr", has=tab.locator("td:first-child", has_text=re.compile("^bridge$")))
    bridge.locator("details summary").click()
    strip = bridge.locator(".crag-strips tbody tr td").nth(3)
    assert strip.is_visible() and strip.inner_text().startswith("The Golden Gate Bridge is a suspension bridge")
    tab.check("#refused")
    [(_, _, text)] = shown_rows(tab)
    assert text.startswith("near-miss") and tab.inner_text("#shown") == "1"
    tab.uncheck("#refused")
    assert len(shown_rows(tab)) == 3 and errors == []


def test_the_page_sends_no_form(browser, answered_run, tmp_path):
    page = tmp_path / "report.html"
    write_report(answered_run, page)
    tab, _ = opened(browser, page)
    blocked = tab.evaluate("""() => new Promise(resolve => {
        document.addEventListener('securitypolicyviolation', event => resolve(event.effectiveDirective));
        const form = Object.assign(document.createElement('form'), {method: 'post', action: 'https://example.org/'});
        document.body.append(form);
        form.submit();
        setTimeout(() => resolve(null), 3000);
    })""")
    assert blocked == "form-action" and tab.url == page.resolve().as_uri()
