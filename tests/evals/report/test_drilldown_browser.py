"""Clicks through the report's drill-down in a real headless Chromium (Playwright): choose a
configuration, choose a fact it lost, and the context at the asking turn appears.

Skipped with the reason when Playwright or a Chromium is missing; `nox -s browser` installs
Playwright and, when the machine has no Chromium, Playwright's own.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rollsum_evals.report import write_report

from tests.evals.report.realrun import grid_run

pytestmark = pytest.mark.slow

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (nox -s browser)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except Exception as err:  # Playwright raises its own Error for a missing or broken browser
            pytest.skip(f"no Chromium to drive (apt-get install chromium, or nox -s browser): {err}"[:300])
        yield b
        b.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("drill-browser")
    return write_report(grid_run(root), root / "out", n_resamples=200)


def _data(page_text: str) -> dict[str, Any]:
    start = page_text.index('id="drilldown-data">') + len('id="drilldown-data">')
    data: dict[str, Any] = json.loads(page_text[start: page_text.index("</script>", start)])
    return data


def test_choosing_a_config_and_a_lost_fact_shows_its_context(browser: Any, report: Path) -> None:
    data = _data(report.read_text())
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(report.as_uri())
    options = page.locator("#dd-config option").all_text_contents()
    assert options == [f"{c['key']}: {c['label']}" for c in data["configs"]]
    # the last configuration with two or more lost facts, its second fact: not what loads first
    ci = max(i for i, c in enumerate(data["configs"]) if len(c["facts"]) >= 2)
    page.locator("#dd-config").select_option(index=ci)
    page.locator("#dd-fact").select_option(index=1)
    fact = data["configs"][ci]["facts"][1]
    ctx = data["contexts"][fact["context"]]
    assert page.locator("#dd-question").text_content() == fact["question"]
    assert page.locator("#dd-answer").text_content() == fact["answer"]
    assert page.locator("#dd-where").text_content() == fact["where"] and "turn" in fact["where"]
    summaries = page.locator("#dd-summary pre").all_text_contents()
    assert summaries == [s["text"] for s in ctx["summary"]]
    tail = page.locator("#dd-tail .dd-msg").all_text_contents()
    assert len(tail) == len(ctx["tail"]) > 0
    for shown, msg in zip(tail, ctx["tail"], strict=True):
        assert shown.startswith(f"#{msg['index']} {msg['role']}") and msg["text"][:50] in shown
    assert f"asked at turn {fact['asked_turn']}" in (page.locator("#dd-asked").text_content() or "")
    # another configuration replaces the view
    other = 0 if ci else 1
    page.locator("#dd-config").select_option(index=other)
    assert page.locator("#dd-question").text_content() == data["configs"][other]["facts"][0]["question"]
    page.close()
