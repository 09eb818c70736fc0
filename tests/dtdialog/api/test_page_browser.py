"""The chat page's tree pictures, loading state and the offline API docs in headless Debian Chromium (Playwright),
against a real ``dtdialog serve`` over the small hand-written index."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import pytest
from api_helpers import SPARK_PLUG_QUESTION

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: the rendered size (CSS px) of the smallest text of a tree picture: its font size times the picture's scale
SMALLEST_TEXT_PX = """(id) => {
  const svg = document.querySelector(`#${id} svg`);
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const sizes = [...svg.querySelectorAll("text")].map((t) => parseFloat(getComputedStyle(t).fontSize) * scale);
  return Math.min(...sizes);
}"""


#: the page as support agents open it: the explain panel with both trees, ids and scores
AGENT_VIEW = "/?view=agent"
BRAKES = "My brakes squeal when I stop, even though I replaced the pads."
#: what a customer must never read: an answer id ("t-brakes-1#1") or a score ("0.82")
AGENT_ONLY = re.compile(r"\S#\d|\d\.\d")


@pytest.fixture(scope="module")
def server_url(small_index, tmp_path_factory):
    from eval.load_test import local_server

    with local_server(index=small_index, startup_timeout=600, workdir=tmp_path_factory.mktemp("page-server")) as url:
        yield url


def _offline_page(browser, server_url, *, bypass_csp: bool = True):
    """Return a page whose requests to any other host are aborted, and the list of those requests.

    ``bypass_csp``: Playwright's string waits are refused by the chat page's policy; the docs pages keep theirs.
    """
    page = browser.new_page(bypass_csp=bypass_csp, viewport={"width": 1400, "height": 1000})
    local = urlsplit(server_url).netloc
    blocked: list[str] = []

    def only_local(route):
        if urlsplit(route.request.url).netloc == local:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    return page, blocked


def test_trees_are_readable_scroll_when_large_and_zoom(browser, server_url):
    page, _ = _offline_page(browser, server_url)
    page.goto(server_url + AGENT_VIEW)
    page.wait_for_load_state("networkidle")
    page.keyboard.type(SPARK_PLUG_QUESTION)
    page.keyboard.press("Enter")
    page.locator("#question-tree svg").wait_for(timeout=120_000)

    readable = page.evaluate(SMALLEST_TEXT_PX, "question-tree")
    assert readable >= 11.9, readable  # 12 px, give or take the rounding of the picture's width to whole pixels
    box = page.evaluate("""() => { const b = document.getElementById('question-tree');
        return {scroll: b.scrollWidth, client: b.clientWidth, svg: b.querySelector('svg').getBoundingClientRect().width}; }""")
    if box["svg"] > box["client"]:
        assert box["scroll"] > box["client"], box  # a large tree scrolls instead of shrinking

    bar = page.locator('.zoombar[data-controls="question-tree"]')
    bar.get_by_role("button", name="Zoom in").click()
    bigger = page.evaluate(SMALLEST_TEXT_PX, "question-tree")
    assert bigger > readable * 1.2, (readable, bigger)
    assert bar.locator(".zoom-level").inner_text().endswith("%")

    bar.get_by_role("button", name="Fit to the panel").click()
    fitted = page.evaluate("""() => { const b = document.getElementById('question-tree');
        return [b.querySelector('svg').getBoundingClientRect().width, b.clientWidth]; }""")
    assert fitted[0] <= fitted[1], fitted

    page.locator("#question-tree").hover()
    before = page.evaluate(SMALLEST_TEXT_PX, "question-tree")
    page.keyboard.down("Control")
    page.mouse.wheel(0, -100)
    page.keyboard.up("Control")
    page.wait_for_function(f"({SMALLEST_TEXT_PX})('question-tree') > {before}")

    bar.get_by_role("button", name="Readable size").click()
    assert page.evaluate(SMALLEST_TEXT_PX, "question-tree") == pytest.approx(readable, abs=0.05)
    if page.locator("#answer-tree svg").count():  # an answer was delivered: its tree is readable too
        assert page.evaluate(SMALLEST_TEXT_PX, "answer-tree") >= 11.9
    page.close()


def test_page_says_it_is_loading_until_the_engine_is_ready(browser, server_url):
    page = browser.new_page(bypass_csp=True)
    state = {"loading": True, "asked": 0}

    def health(route):
        state["asked"] += 1
        if not state["loading"]:
            route.continue_()
            return
        body = {"status": "ok", "version": "test", "engine_loaded": False, "ready": False, "loading": True,
                "problem": None}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/healthz", health)
    page.goto(server_url + "/")
    page.wait_for_function("document.getElementById('status').textContent.includes('Loading')")
    assert page.locator("#send").is_disabled()
    page.locator("#message").fill("My brakes squeal.")
    page.keyboard.press("Enter")
    assert page.locator("#message").input_value() == "My brakes squeal."  # kept while the engine loads
    assert page.locator("#transcript li").count() == 0
    state["loading"] = False
    page.wait_for_function("!document.getElementById('send').disabled", timeout=30_000)
    assert "Loading" not in page.locator("#status").inner_text()
    assert state["asked"] >= 2
    page.close()


def test_swagger_ui_and_redoc_render_with_other_hosts_blocked(browser, server_url):
    page, blocked = _offline_page(browser, server_url, bypass_csp=False)
    page.goto(server_url + "/docs")
    page.locator(".opblock").first.wait_for(timeout=60_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/healthz" in p for p in paths) and any("/sessions" in p for p in paths), paths

    page.goto(server_url + "/redoc")
    # a locator, not wait_for_function: the docs pages' policy forbids the eval that one runs on
    headings = page.locator("h2")
    headings.filter(has_text="Healthz").first.wait_for(timeout=60_000)
    assert {"Healthz", "Readyz", "Rest Webhook"} <= {h.strip() for h in headings.all_inner_texts()}
    assert blocked == [], blocked  # neither page even tried another host
    page.close()


def test_customers_read_why_under_the_answer_and_never_ids_or_scores(browser, server_url):
    page, _ = _offline_page(browser, server_url)
    page.goto(server_url + "/")
    page.wait_for_load_state("networkidle")
    page.keyboard.type(BRAKES)
    page.keyboard.press("Enter")
    answer = page.locator("#transcript li.msg.bot").first
    answer.wait_for(timeout=120_000)
    assert answer.get_attribute("data-kind") == "answer", answer.inner_text()
    why = answer.locator(".why")
    assert why.is_visible()
    assert '"My brakes squeal when I stop"' in why.inner_text() and "replaced the pads" in why.inner_text()
    shown = page.locator("body").inner_text()
    assert not AGENT_ONLY.search(shown), AGENT_ONLY.search(shown)
    assert page.locator("#explain").is_hidden() and page.locator("[data-answer-id]").count() == 0
    said = why.inner_text()
    page.reload()  # the transcript comes back from the stored session, each answer with its why
    page.locator("#transcript li.msg.bot .why").wait_for(timeout=30_000)
    assert page.locator("#transcript li.msg.bot .why").inner_text() == said
    page.close()

    agent, _ = _offline_page(browser, server_url)  # the agents' view of the same turn keeps the details
    agent.goto(server_url + AGENT_VIEW)
    agent.wait_for_load_state("networkidle")
    agent.keyboard.type(BRAKES)
    agent.keyboard.press("Enter")
    agent.locator("#explain-body").wait_for(state="visible", timeout=120_000)
    answer_id = agent.locator("#answer-id").inner_text()[1:-1]
    assert re.fullmatch(r"\S+#\d+", answer_id), answer_id
    assert agent.locator("#explain-summary li").first.inner_text() == f"Chose answer {answer_id}."
    assert agent.locator("#transcript li.msg.bot .why").is_visible()
    agent.close()
