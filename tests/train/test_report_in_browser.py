"""report.html in a real browser (Debian's chromium, headless, network off): it
loads from disk with no console error and no request off the machine, draws one
mark per step, one blame row per skill line and tasks × steps grid cells, shows a
decision's reason on hover, and its screenshot is not blank. The quickstart's
report (the embedded model) is the one the README shows."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from browser import browser, load, not_blank, screenshot  # noqa: F401  (fixture)
from helpers import have_local
from train.world import HARMFUL, HELPFUL, NEUTRAL, ScriptedOptimizer, edits_reply, train_args
from typer.testing import CliRunner

from skillopt.cli.main import app

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
README_SHOT = ROOT / "docs" / "report.png"
runner = CliRunner()
# read at import: the `isolated` fixture clears every SKILLOPT_* variable
ARTIFACTS = os.environ.get("SKILLOPT_TEST_ARTIFACTS")
UPDATE_SCREENSHOT = os.environ.get("SKILLOPT_UPDATE_SCREENSHOT") == "1"


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: `SKILLOPT_TEST_ARTIFACTS` when set (CI keeps them),
    else the test's own directory."""
    return Path(ARTIFACTS) if ARTIFACTS else tmp_path


def counts(driver) -> dict:
    return driver.execute_script(
        """
        const q = (s) => document.querySelectorAll(s).length;
        const data = JSON.parse(document.getElementById("skillopt-data").textContent);
        return {
          points: q("svg.score-chart .point"),
          blame: q("table.blame tr.blame-line"),
          cells: q("table.outcomes td.cell"),
          rows: q("table.outcomes tr.task-row"),
          steps: q("details.step"),
          bars: q("svg.test-chart .test-bar"),
          data_steps: data.steps.length,
          data_tasks: data.grid.tasks.length,
          data_blame: data.blame.length,
          width: document.querySelector("svg.score-chart").getBoundingClientRect().width,
        };
        """
    )


def check_page(driver, report: Path, run: Path) -> dict:
    page = load(driver, report)
    assert page.errors == [], page.errors
    assert page.external == [], page.external
    state = json.loads((run / "state.json").read_text())
    best = (run / "best" / "SKILL.md").read_text().splitlines()
    c = counts(driver)
    steps = len(state["steps"])
    assert c["points"] == c["steps"] == c["data_steps"] == steps
    assert c["blame"] == c["data_blame"] == len(best)
    assert c["cells"] == c["data_tasks"] * steps and c["rows"] == c["data_tasks"] > 0
    assert c["bars"] == len(state["test"])
    assert c["width"] > 300  # drawn, not collapsed
    return c


def test_scripted_run_report_in_the_browser(browser, world, models, tmp_path):  # noqa: F811
    models["set"](
        ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(HARMFUL), edits_reply(HELPFUL)])
    )
    res = runner.invoke(app, train_args(world, "--epochs", "3"))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    run = world["root"] / "runs" / run_id
    check_page(browser, run / "report.html", run)

    # hovering the accepted step shows its reason and flips in the page's tooltip
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    point = browser.find_element(By.CSS_SELECTOR, 'svg.score-chart .point[data-step="3"]')
    ActionChains(browser).move_to_element(point).perform()
    tip = browser.find_element(By.ID, "tip")
    assert tip.is_displayed()
    assert "step 3 · accepted" in tip.text and "fail→pass 2: word-3, word-4" in tip.text

    # a grid cell's tooltip: task, step, outcome and flip
    cell = browser.find_element(
        By.CSS_SELECTOR, 'tr.task-row[data-task="word-3"] td.cell[data-step="3"]'
    )
    ActionChains(browser).move_to_element(cell).perform()
    assert tip.text == "word-3 · step 3: pass · fail→pass against the incumbent"
    cell = browser.find_element(
        By.CSS_SELECTOR, 'tr.task-row[data-task="keep-3"] td.cell[data-step="0"]'
    )
    ActionChains(browser).move_to_element(cell).perform()
    assert tip.text == "keep-3 · step 0: pass"

    # the blame row of the learned line links to its step's evidence
    link = browser.find_element(By.CSS_SELECTOR, 'tr.blame-line[data-step="3"] a')
    link.click()
    assert browser.execute_script("return location.hash") == "#step-3"

    shot = screenshot(browser, artifacts(tmp_path) / "scripted-report.png")
    assert not_blank(shot)


def test_the_readme_screenshot_is_a_small_real_png():
    data = README_SHOT.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) < 400_000
    assert not_blank(README_SHOT)
    assert "](docs/report.png)" in (ROOT / "README.md").read_text()


@pytest.mark.slow  # trains the quickstart on the embedded model
@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
def test_quickstart_report_renders(browser, isolated, tmp_path):  # noqa: F811
    """The README's quickstart, then its report in the browser. With
    `SKILLOPT_UPDATE_SCREENSHOT=1` the top of the page becomes docs/report.png."""
    import shutil

    for folder in ("skills", "tasks"):
        shutil.copytree(ROOT / folder, isolated / folder)
    res = runner.invoke(
        app, ["train", "skills/product-codes", "--tasks", "tasks/product-codes.yaml"]
    )
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    run = isolated / "runs" / run_id
    report = run / "report.html"
    assert f"report: runs/{run_id}/report.html · report.md" in res.stdout
    check_page(browser, report, run)
    full = screenshot(browser, artifacts(tmp_path) / "quickstart-report.png")
    assert not_blank(full)

    # the README's picture: the top of the page (header, score chart, spend)
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "clip": {"x": 0, "y": 0, "width": 1240, "height": 1100, "scale": 0.68}},
    )
    top = artifacts(tmp_path) / "quickstart-top.png"
    top.write_bytes(base64.b64decode(shot["data"]))
    assert not_blank(top)
    if UPDATE_SCREENSHOT:
        README_SHOT.parent.mkdir(exist_ok=True)
        README_SHOT.write_bytes(top.read_bytes())
