"""The demo app in a real browser: served on a loopback port, driven by headless Chromium through Selenium.

Debian's ``chromium`` and ``chromedriver`` (``.ci/run`` installs them); nothing is downloaded:
the driver path is given, so Selenium Manager never runs. Each tab is filled in, submitted, and
what the page shows is checked, then one bad input per tab must give a notice in the page.
With ``CROP_HF_SCREENSHOTS=<folder>`` a screenshot of each tab is saved there
(``scripts/app_screenshots.py`` writes the ones in ``docs/images/``).
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from crop_hf.app.models import PARSER_INTENTS

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ["SE_OFFLINE"] = "true"  # Selenium Manager, if anything reached it, must not download

CHROMIUM = next((path for path in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if path and Path(path).is_file()), None)
CHROMEDRIVER = next((path for path in (shutil.which("chromedriver"), "/usr/bin/chromedriver",
                                       "/usr/lib/chromium/chromedriver") if path and Path(path).is_file()), None)
WAIT = 60  # seconds: the first request of a tab loads its model on two shared cores

try:
    import gradio  # noqa: F401
    import selenium  # noqa: F401

    MISSING = None
except ImportError as error:
    MISSING = f"{error.name} is not installed (pip install -e '.[dev]')"
if MISSING is None and (CHROMIUM is None or CHROMEDRIVER is None):
    MISSING = "no Chromium or chromedriver (apt-get install chromium chromium-driver; .ci/run does)"
pytestmark = [
    pytest.mark.skipif(MISSING is not None, reason=f"browser test skipped: {MISSING}"),
    # gradio's queue calls pandas options that pandas 3 deprecates: not ours to fix
    pytest.mark.filterwarnings("ignore:'future.no_silent_downcasting' is deprecated"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    from crop_hf.app import AppModels, build_app, launch

    # the same folder as tests/test_app.py's models: built once per session
    models = AppModels(cache_dir=str(tmp_path_factory.getbasetemp() / "app-models"))
    models.load_all()
    demo = build_app(models)
    port = free_port()
    launch(demo, port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def browser(url):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1400", "--lang=en-US", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.get(url)
    Page(driver).wait_for("#lt-submit")
    yield driver
    driver.quit()


class Page:
    """Small helpers over the driver: fill a Gradio textbox, click, wait for what the page shows."""

    def __init__(self, driver) -> None:
        self.driver = driver

    def wait_for(self, css: str, timeout: float = WAIT):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(
            expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, css)))

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def fill(self, elem_id: str, text: str) -> None:
        from selenium.webdriver.common.keys import Keys

        box = self.wait_for(f"#{elem_id} textarea, #{elem_id} input")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.DELETE)
        if text:
            # a long paste goes in as one script call (send_keys types character by character)
            if len(text) > 500:
                self.driver.execute_script(
                    "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
                    box, text)
            else:
                box.send_keys(text)

    def choose(self, elem_id: str, choice: str) -> None:
        from selenium.webdriver.common.by import By

        self.wait_for(f"#{elem_id}")
        (label,) = [element for element in self.find(f"#{elem_id} label") if element.text.strip() == choice]
        label.find_element(By.CSS_SELECTOR, "input").click()

    def open_tab(self, name: str) -> None:
        from selenium.webdriver.common.by import By

        (tab,) = [button for button in self.driver.find_elements(By.CSS_SELECTOR, "button[role='tab']")
                  if button.text.strip() == name]
        tab.click()

    def submit(self, button_id: str, result_css: str, tab: str):
        """Clear the tab's outputs, click, and wait for ``result_css`` or a notice, whichever comes."""
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.execute_script(
            "document.querySelectorAll(arguments[0]).forEach(e => e.setAttribute('data-stale', '1'));",
            f"#{tab}-message *, {result_css}")
        self.wait_for(f"#{button_id}").click()
        fresh = ("return [...document.querySelectorAll(arguments[0])]"
                 ".some(e => !e.hasAttribute('data-stale') && e.getClientRects().length > 0);")
        WebDriverWait(self.driver, WAIT).until(
            lambda d: d.execute_script(fresh, f"{result_css}, #{tab}-message .crop-message"))

    def message(self, tab: str) -> str:
        return " ".join(e.text for e in self.find(f"#{tab}-message .crop-message"))

    def marks(self, container: str) -> list[tuple[str, str]]:
        from selenium.webdriver.common.by import By

        return [(m.find_element(By.CSS_SELECTOR, ".crop-entity-text").text, m.get_attribute("data-label"))
                for m in self.find(f"{container} mark.crop-entity")]

    def screenshot(self, name: str) -> None:
        folder = os.environ.get("CROP_HF_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.driver.set_window_size(1280, 2400)  # then as tall as the tab's last output reaches
            bottom = self.driver.execute_script(
                "return Math.max(...[...document.querySelectorAll('[id$=-message], [id^=lt-], [id^=pj-], [id^=sp-]')]"
                ".filter(e => e.getClientRects().length).map(e => e.getBoundingClientRect().bottom));")
            self.driver.set_window_size(1280, min(max(int(bottom) + 160, 900), 2400))
            self.driver.execute_script("window.scrollTo(0, 0)")
            self.driver.save_screenshot(str(Path(folder) / f"app-{name}.png"))
            self.driver.set_window_size(1280, 1400)


def test_the_banner_says_the_tiny_models_output_is_meaningless(browser):
    banner = Page(browser).wait_for("#crop-tiny-banner").text
    assert "Tiny random-weight models: their output is meaningless." in banner
    assert "--mt_model, --ner_model, --parser_model, --align_model" in banner


def test_labeled_translation_tab(browser):
    page = Page(browser)
    page.open_tab("Labeled translation")
    page.fill("lt-text", "I live in [Gothenburg|LOC] and work for [Volvo|ORG] .")
    page.fill("lt-tgt", "es")
    page.submit("lt-submit", "#lt-source mark", "lt")
    assert page.message("lt") == ""
    assert page.marks("#lt-source") == [("Gothenburg", "LOC"), ("Volvo", "ORG")]
    assert page.find("#lt-source .crop-marked-source")[0].text == \
        "I live in __SLOT0__ Gothenburg __SLOT0__ and work for __SLOT1__ Volvo __SLOT1__ ."
    assert "2 entities written in the input" in page.find("#lt-source")[0].text
    tried = int(page.find("#lt-translation .crop-tried")[0].text)
    rows = page.find("#lt-hypotheses-table table.crop-hypotheses tr")[1:]
    assert len(rows) == 4 and 1 <= tried <= 4  # the slider's default: 4 hypotheses
    used = [row.text.rsplit(" ", 1)[-1] for row in rows]
    assert used.count("chosen") == 1 and used[tried:] == ["needed"] * (4 - tried)
    # the random model keeps no marker: every hypothesis says why, per slot
    for row in rows:
        assert "slot 0 (LOC" in row.text and "slot 1 (ORG" in row.text
    page.screenshot("labeled-translation")

    page.fill("lt-tgt", "xx")  # bad input: an unknown language code
    page.submit("lt-submit", "#lt-source mark", "lt")
    assert "Unknown target language 'xx'" in page.message("lt")
    assert page.marks("#lt-source") == [] and page.find("#lt-hypotheses-table tr") == []
    assert "Traceback" not in browser.page_source


def test_projection_tab(browser):
    page = Page(browser)
    page.open_tab("Projection")
    page.fill("pj-tokens", "Angela Merkel visited Paris on Monday .")
    page.fill("pj-tags", "B-PER I-PER O B-LOC O O O")
    page.fill("pj-target", "Angela Merkel besuchte am Montag Paris .")
    page.choose("pj-method", "alignment")
    page.fill("pj-alignment", "0-0 1-1 2-2 3-5 4-4 5-4 6-6")
    page.submit("pj-submit", "#pj-spans mark", "pj")
    assert page.message("pj") == ""
    assert page.marks("#pj-spans") == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert [e.text for e in page.find("#pj-spans .crop-status")] == ["projected", "projected"]
    links = [line.get_attribute("data-link") for line in page.find("#pj-links line.crop-link")]
    assert links == ["0-0", "1-1", "2-2", "3-5", "4-4", "5-4", "6-6"]
    assert page.find("#pj-links .crop-pharaoh")[0].text == "0-0 1-1 2-2 3-5 4-4 5-4 6-6"
    page.screenshot("projection")

    page.choose("pj-method", "lexical")
    page.submit("pj-submit", "#pj-spans mark", "pj")
    assert page.marks("#pj-spans") == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert "uses no word alignment" in page.find("#pj-links")[0].text

    page.fill("pj-tags", "B-PER I-PER O")  # bad input: fewer tags than tokens
    page.submit("pj-submit", "#pj-spans mark", "pj")
    assert page.message("pj") == "⚠ 7 source tokens but 3 tags: give exactly one tag per token."
    assert page.marks("#pj-spans") == [] and page.find("#pj-links line") == []


def test_semantic_parsing_tab(browser):
    page = Page(browser)
    page.open_tab("Semantic parsing")
    utterance = "What is the weather in Delhi tomorrow"
    page.fill("sp-text", utterance)
    page.submit("sp-submit", "#sp-tree .crop-node", "sp")
    assert page.message("sp") == ""
    nodes = page.find("#sp-tree .crop-node")
    assert nodes[0].get_attribute("data-label") in {f"IN:{intent}" for intent in PARSER_INTENTS}
    assert [w.text for w in page.find("#sp-tree .crop-word")] == utterance.split()
    assert "predicted by the parser" in page.find("#sp-tree")[0].text

    page.fill("sp-text", "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] [SL:DATE_TIME tomorrow ] ]")
    page.submit("sp-submit", "#sp-tree .crop-node", "sp")
    from selenium.webdriver.common.by import By

    assert [n.get_attribute("data-label") for n in page.find("#sp-tree .crop-node")] == [
        "IN:GET_WEATHER", "SL:LOCATION", "SL:DATE_TIME"]
    slot = page.find("#sp-tree .crop-node[data-label='SL:LOCATION']")[0]
    assert [w.text for w in slot.find_elements(By.CSS_SELECTOR, ".crop-word")] == ["Delhi"]
    assert page.find("#sp-tree .crop-parse")[0].text == \
        "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] [SL:DATE_TIME tomorrow ] ]"
    page.screenshot("semantic-parsing")

    page.fill("sp-text", " ".join(["word"] * 5000))  # bad input: a 5,000-word paste
    page.submit("sp-submit", "#sp-tree .crop-node", "sp")
    assert "The utterance is too long (5000 words): this demo takes at most 200 words" in page.message("sp")
    assert page.find("#sp-tree .crop-node") == []
