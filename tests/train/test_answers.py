"""Every answer in sight: `skillopt show RUN STEP [--task ID]` lists a step's tasks
and prints one task's prompt, answer, expected value, score and feedback, incumbent
beside candidate; the HTML report carries the same answers (escaped, filterable);
bad input names what the run has."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import browser, load, not_blank, screenshot  # noqa: F401  (fixture)
from helpers import write_suite
from train.world import HARMFUL, HELPFUL, NEUTRAL, ScriptedOptimizer, edits_reply, follow_skill
from train.world import train_args as world_args
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.models import ScriptedModel, register_model, unregister_model
from skillopt.rollouts.view import shown as expected_text

runner = CliRunner()
# read at import: the `isolated` fixture clears every SKILLOPT_* variable
ARTIFACTS = os.environ.get("SKILLOPT_TEST_ARTIFACTS")
# an answer that would run if the page ever put it in as markup (and `<!--` with
# `</script>`, which would end the page's JSON early if it were embedded as it is)
EVIL = (
    "<!--</script><script>document.title='pwned'</script>"
    "<img src=x onerror=\"document.title='pwned'\">"
)


def evil_target(messages) -> str:
    """The world's target, but the task `evil` is answered with markup."""
    return EVIL if messages[-1]["content"] == "evil" else follow_skill(messages)


def trained(world, models, *extra: str) -> tuple[str, object]:
    """A run of three steps (a tie, a harmful candidate, the helpful one accepted)
    on the world's suite with one more validation item, `evil`, answered with markup."""
    items = [
        *[
            {
                "id": f"{kind}-{i}",
                "input": f"{kind}-{i}",
                "expected": f"WORD-{i}" if kind == "word" else f"keep-{i}",
                "split": ["train", "train", "train", "val", "val", "test", "test", "train"][i],
            }
            for i in range(8)
            for kind in ("word", "keep")
        ],
        {"id": "evil", "input": "evil", "expected": "<b>good</b>", "split": "val"},
    ]
    suite = write_suite(world["root"] / "tasks" / "words.yaml", items)
    register_model("scripted/evil-target", ScriptedModel(evil_target, name="scripted/evil-target"))
    models["set"](
        ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(HARMFUL), edits_reply(HELPFUL)])
    )
    try:
        args = world_args({**world, "suite": suite}, "--epochs", "3", *extra)
        res = runner.invoke(app, [*args, "--target", "scripted/evil-target"])
    finally:
        unregister_model("scripted/evil-target")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    return run_id, world["root"] / "runs" / run_id


@pytest.mark.slow  # a run, then `show` four times
def test_show_lists_a_steps_tasks_and_opens_one(world, models):
    run_id, _ = trained(world, models)
    res = runner.invoke(app, ["show", run_id, "3"])
    assert res.exit_code == 0, res.output
    assert "Skillopt-Decision: accepted" in res.stdout  # the step's evidence stays first
    listed = res.stdout.split("tasks at step 3")[1]
    # the batch (train, the incumbent) and the gate (val, incumbent → candidate)
    assert re.search(r"train\s+word-0\s+fail 0\.000", listed)
    assert re.search(r"val\s+word-3\s+fail 0\.000\s+pass 1\.000\s+fail→pass", listed)
    assert re.search(r"val\s+keep-3\s+pass 1\.000\s+pass 1\.000\s*\n", listed)

    one = runner.invoke(app, ["show", run_id, "3", "--task", "word-3"])
    assert one.exit_code == 0, one.output
    text = one.stdout
    assert text.startswith("word-3 · step 3 · val · fail→pass")
    assert "expected: WORD-3" in text
    incumbent, candidate = text.split("── incumbent")[1].split("── candidate")
    # each side: the prompt as the target saw it (its skill, then the task), the
    # answer, the score and the scorer's feedback
    assert "[system]" in incumbent and "[user]\n    word-3" in incumbent
    assert HELPFUL not in incumbent and HELPFUL in candidate
    assert "answer: word-3" in incumbent and "answer: WORD-3" in candidate
    assert "score: 0.000 (fail)" in incumbent and "score: 1.000 (pass)" in candidate
    assert "differs only in letter case" in incumbent and "exact match" in candidate

    test = runner.invoke(app, ["show", run_id, "test"])
    assert test.exit_code == 0, test.output
    assert re.search(r"no skill\s+initial\s+best\s+flip", test.stdout)
    assert re.search(r"word-5\s+fail 0\.000\s+fail 0\.000\s+pass 1\.000\s+fail→pass", test.stdout)


@pytest.mark.slow  # a run, then six commands that fail
def test_show_names_what_exists_for_an_unknown_run_step_or_task(world, models):
    run_id, _ = trained(world, models)
    cases = {
        ("show", "no-such-run", "1"): "no run 'no-such-run'",
        ("show", run_id, "9"): "has no step 9 (recorded steps: 0 to 3)",
        (
            "show",
            run_id,
            "9",
            "--task",
            "word-3",
        ): "has no tasks at step 9 (places with tasks: 0, 1, 2, 3, test)",
        (
            "show",
            run_id,
            "3",
            "--task",
            "nope",
        ): "has no task 'nope' at step 3 (its tasks: evil, keep-0",
        ("show", run_id, "three"): "STEP 'three' is neither a step number nor `test`",
    }
    for args, message in cases.items():
        res = runner.invoke(app, list(args))
        assert res.exit_code == 2, (args, res.output)
        assert message in res.stderr, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    # the unknown run's message names the runs that are there
    assert run_id in runner.invoke(app, ["show", "no-such-run", "1"]).stderr


def test_show_without_the_store_says_so_and_keeps_the_evidence(world, models):
    run_id, run = trained(world, models)
    shutil.move(world["root"] / "runs" / "rollouts.sqlite", world["root"] / "elsewhere.sqlite")
    res = runner.invoke(app, ["show", run_id, "3"])
    assert res.exit_code == 0, res.output
    assert "Skillopt-Decision: accepted" in res.stdout
    assert "rollout store (runs/rollouts.sqlite) is not here" in res.stdout
    one = runner.invoke(app, ["show", run_id, "3", "--task", "word-3"])
    assert one.exit_code == 2 and "is not here: no answers to show" in one.stderr


class _Text(HTMLParser):
    """Every start tag of a page, and whether a <script> holds the answer's markup."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def decoded(a: dict) -> list[dict]:
    """The page's compact answers (arrays of indices) as the dicts they stand for."""
    texts = a["texts"]

    def text(i):
        if isinstance(i, list):  # a prompt: its parts' texts, joined
            return "".join(texts[j] for j in i)
        return None if i is None else texts[i]

    def answer(x):
        x = x + [None] * (7 - len(x))  # trailing nulls are left out
        keys = ("prompt", "answer", "feedback", "error")
        return {
            "sample": x[0],
            "outcome": a["outcomes"][x[1]],
            "score": x[2],
            **{k: text(v) for k, v in zip(keys, x[3:])},
        }

    def side(s):
        return {
            "label": a["labels"][s[0]],
            "hash": a["skills"][s[1]],
            "outcome": a["outcomes"][s[2]],
            "score": s[3],
            "answers": [answer(x) for x in s[4]],
        }

    return [
        {
            "where": a["places"][r[0]],
            "split": a["splits"][r[1]],
            "task": r[2],
            "outcome": a["outcomes"][r[3]],
            "flip": None if r[4] is None else a["flips"][r[4]],
            "expected": text(r[5]),
            "sides": [side(s) for s in r[6]],
        }
        for r in a["rows"]
    ]


def test_the_report_carries_every_answer_escaped(world, models):
    run_id, run = trained(world, models)
    html = (run / "report.html").read_text()
    # the markup answered is nowhere in the page as markup: no element of it exists
    assert EVIL not in html and "<script>document.title" not in html and "<!--" not in html
    parser = _Text()
    parser.feed(html)
    assert not [a for t, a in parser.tags if t == "img"]
    assert sum(1 for t, _ in parser.tags if t == "script") == 2  # the data, the page's own
    raw = html.split('id="skillopt-data">')[1].split("</script>")[0]
    answers = json.loads(raw)["answers"]
    assert EVIL in answers["texts"]  # in the data, for the page to show as text
    # compact: no space between JSON tokens, a row an array
    assert '", "' not in raw and '": ' not in raw
    assert answers["fields"] == {
        "row": ["place", "split", "task", "outcome", "flip", "expected: text", "sides"],
        "side": ["label", "skill", "outcome", "score", "answers"],
        "answer": [
            "sample",
            "outcome",
            "score",
            "prompt",
            "answer: text",
            "feedback: text",
            "error: text",
        ],
    }
    rows = {(r["where"], r["split"], r["task"]): r for r in decoded(answers)}
    flip = rows[("step 3", "val", "word-3")]
    assert flip["flip"] == "fail→pass" and flip["outcome"] == "pass"
    inc, cand = flip["sides"]
    assert (inc["label"], inc["outcome"], cand["label"], cand["outcome"]) == (
        "incumbent",
        "fail",
        "candidate",
        "pass",
    )
    assert cand["answers"][0]["answer"] == "WORD-3" and flip["expected"] == "WORD-3"
    assert inc["answers"][0]["feedback"].startswith("expected 'WORD-3'")
    assert cand["answers"][0]["prompt"].endswith("[user]\nword-3")
    evil = rows[("step 0", "val", "evil")]
    assert evil["sides"][0]["answers"][0]["answer"] == EVIL
    assert evil["expected"] == "<b>good</b>"
    # every text is embedded once, and a skill once however many prompts it began:
    # one text holds the accepted skill, though it began the prompt of every task it ran
    texts = answers["texts"]
    assert len(texts) == len(set(texts))
    assert sum(1 for t in texts if HELPFUL in t) == 1
    assert (
        sum(1 for r in rows.values() for s in r["sides"] if HELPFUL in s["answers"][0]["prompt"])
        >= 5
    )
    # the page holds every answer the run has, exactly (prompts joined back whole)
    found = api.run_answers(run_id, run_dir=world["root"] / "runs")
    assert len(found.views) == len(rows)
    for v in found.views:
        r = rows[(v.where, v.split, v.task_id)]
        assert (r["outcome"], r["flip"], r["expected"]) == (
            v.outcome,
            v.flip,
            expected_text(v.expected),
        )
        for side, s in zip(r["sides"], v.sides, strict=True):
            assert (side["label"], side["hash"], side["outcome"], side["score"]) == (
                s.label,
                s.skill_hash[:12],
                s.outcome,
                s.score,
            )
            for got, a in zip(side["answers"], s.answers, strict=True):
                assert got == {
                    "sample": a.sample,
                    "outcome": a.outcome,
                    "score": a.score,
                    "prompt": a.prompt,
                    "answer": a.answer,
                    "feedback": a.feedback or None,
                    "error": a.error,
                }
    assert {("step 1", "train", "word-0"), ("test", "test", "keep-5")} <= set(rows)
    # the server writes the filters and an empty table: the page's script draws the rows
    assert 'class="answer-row' not in html and "<tbody></tbody></table>" in html
    assert f'<noscript><p class="empty">The {len(rows)} answers need the page\'s script' in html


@pytest.mark.browser
def test_the_answers_viewer_filters_and_opens_in_the_browser(browser, world, models, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    _, run = trained(world, models)
    page = load(browser, run / "report.html")
    assert page.errors == [] and page.external == []

    def shown() -> list[str]:
        rows = browser.find_elements(By.CSS_SELECTOR, "table.answers tr.answer-row")
        return [
            f"{r.get_attribute('data-where')} {r.get_attribute('data-task')}"
            for r in rows
            if r.is_displayed()
        ]

    # every row is drawn by the page's script from its data (fewer than 300 here)
    everything = len(shown())
    assert everything == 44
    count = browser.find_element(By.CSS_SELECTOR, ".answer-count")
    assert count.text == "44 of 44 shown"
    assert not browser.find_element(By.CSS_SELECTOR, ".answer-more").is_displayed()
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="flip"]')).select_by_value(
        "fail→pass"
    )
    assert shown() == ["step 3 word-3", "step 3 word-4", "test word-5", "test word-6"]
    assert count.text == "4 of 44 shown"
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="split"]')).select_by_value("val")
    assert shown() == ["step 3 word-3", "step 3 word-4"]

    # a flip opens with the incumbent beside the candidate
    row = 'tr.answer-row[data-where="step 3"][data-task="word-3"]'
    browser.find_element(By.CSS_SELECTOR, row).click()
    sides = browser.find_elements(By.CSS_SELECTOR, "tr.answer-detail .answer-side")
    assert [s.find_element(By.CSS_SELECTOR, ".side-head").text.split(" ·")[0] for s in sides] == [
        "incumbent fail 0.000",
        "candidate pass 1.000",
    ]
    assert "WORD-3" in sides[1].text and "exact match" in sides[1].text
    assert "differs only in letter case" in sides[0].text and "[user]\nword-3" in sides[0].text
    assert sides[0].location["y"] == sides[1].location["y"]  # side by side
    where = Path(ARTIFACTS) if ARTIFACTS else tmp_path
    assert not_blank(screenshot(browser, where / "answers-viewer.png"))
    # the viewer alone: its section of the page
    box = browser.execute_script(
        "const r = document.getElementById('answers').getBoundingClientRect();"
        "return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};"
    )
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**box, "scale": 1}},
    )
    section = where / "answers-viewer-section.png"
    section.write_bytes(base64.b64decode(shot["data"]))
    assert not_blank(section)

    # the markup an answer held is shown as text and never runs
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="flip"]')).select_by_value("")
    browser.find_element(By.CSS_SELECTOR, '[data-filter="task"]').send_keys("evil")
    assert shown() == ["step 0 evil", "step 1 evil", "step 2 evil", "step 3 evil"]
    browser.find_element(
        By.CSS_SELECTOR, 'tr.answer-row[data-where="step 0"][data-task="evil"]'
    ).click()
    opened = browser.find_element(By.CSS_SELECTOR, "tr.answer-detail:not([hidden])")
    assert EVIL in opened.text and "<b>good</b>" in opened.text
    assert browser.find_elements(By.CSS_SELECTOR, "tr.answer-detail img") == []
    assert browser.title != "pwned" and page.errors == []

    # Enter opens (and closes) a row too
    row = browser.find_element(By.CSS_SELECTOR, 'tr.answer-row[data-where="step 1"]')
    row.send_keys(Keys.ENTER)
    assert "open" in row.get_attribute("class").split()
    assert EVIL in row.find_element(By.XPATH, "following-sibling::tr[1]").text
    row.send_keys(Keys.ENTER)
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.answer-detail")) == 1  # step 0's

    # a cell of the tasks × steps grid sets the filters to its step and task, and
    # opens that task's row there
    browser.find_element(
        By.CSS_SELECTOR, 'table.outcomes tr[data-task="word-4"] td.cell[data-step="2"]'
    ).click()
    assert shown() == ["step 2 word-4"]
    assert (
        browser.find_element(By.CSS_SELECTOR, '[data-filter="task"]').get_attribute("value")
        == "word-4"
    )
    opened = browser.find_element(By.CSS_SELECTOR, 'tr.answer-row[data-task="word-4"]')
    assert "open" in opened.get_attribute("class").split()
    assert "[user]\nword-4" in opened.find_element(By.XPATH, "following-sibling::tr[1]").text
    assert page.errors == []


@pytest.mark.browser
def test_a_large_run_draws_300_answers_at_a_time(browser, world, models, tmp_path):  # noqa: F811
    """A run of thousands of answers: the page draws those that match, 300 at a time,
    and a grid cell still finds a row that is not drawn yet."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from skillopt.runs.answers import RunAnswers
    from skillopt.runs.html import data, page
    from skillopt.runs.html.viewer import embedded
    from skillopt.runs.read import open_run

    run_id, run = trained(world, models)
    found = api.run_answers(run_id, run_dir=world["root"] / "runs")
    # the run's 44 rows 16 times over (copies renamed), the run's own last
    views = [
        replace(v, task_id=v.task_id if k == 15 else f"{v.task_id}~{k}")
        for k in range(16)
        for v in found.views
    ]
    d = data.collect(*open_run(run_id, world["root"] / "runs"))
    big = tmp_path / "big.html"
    big.write_text(page.render({**d, "answers": embedded(RunAnswers(run_id, tuple(views)))}))
    pg = load(browser, big)

    def drawn() -> int:
        return len(browser.find_elements(By.CSS_SELECTOR, "table.answers tr.answer-row"))

    count = browser.find_element(By.CSS_SELECTOR, ".answer-count")
    more = browser.find_element(By.CSS_SELECTOR, ".answer-more")
    assert drawn() == 300
    assert count.text == "300 of 704 shown · 704 match: narrow the filters, or show more below"
    assert more.text == "show 300 more"
    more.click()
    assert drawn() == 600 and more.text == "show 104 more"
    more.click()
    assert drawn() == 704 and count.text == "704 of 704 shown" and not more.is_displayed()
    # a filter starts again from the first 300 of what matches
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="split"]')).select_by_value("train")
    assert drawn() == 300 and count.text.startswith("300 of 704 shown · 384 match")
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="flip"]')).select_by_value(
        "fail→pass"
    )
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="split"]')).select_by_value("")
    assert drawn() == 64 and count.text == "64 of 704 shown"

    # the run's own word-3 at step 3 comes last: not drawn until its grid cell is clicked
    Select(browser.find_element(By.CSS_SELECTOR, '[data-filter="flip"]')).select_by_value("")
    row = 'tr.answer-row[data-where="step 3"][data-task="word-3"]'
    assert browser.find_elements(By.CSS_SELECTOR, row) == []
    browser.find_element(
        By.CSS_SELECTOR, 'table.outcomes tr[data-task="word-3"] td.cell[data-step="3"]'
    ).click()
    opened = browser.find_element(By.CSS_SELECTOR, row)
    assert "open" in opened.get_attribute("class").split()
    assert "WORD-3" in opened.find_element(By.XPATH, "following-sibling::tr[1]").text
    assert pg.errors == []
