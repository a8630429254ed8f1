"""The HTML run report's data and page, `skillopt report` (one run, two runs) and
`skillopt blame`, asserted against a scripted run: every number on the page comes
from the run's state.json, events.jsonl, the store's ledger and git."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from train.world import HARMFUL, HELPFUL, NEUTRAL, ScriptedOptimizer, edits_reply, train_args
from typer.testing import CliRunner

from skillopt import api
from skillopt.cli.main import app
from skillopt.runs.html import data as report_data
from skillopt.runs.html import page

runner = CliRunner()
VAL_TASKS = ["keep-3", "keep-4", "word-3", "word-4"]
EVIL = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


def train(world, *extra):
    res = runner.invoke(app, train_args(world, "--epochs", "3", *extra))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.split("history: git log skillopt/")[1].split()[0]
    return res, run_id, world["root"] / "runs" / run_id


@pytest.fixture
def three_steps(world, models):
    """A tie (rejected), a harmful rule (rejected), the helpful rule (accepted: val
    0.5 → 1.0); the helpful edit's rationale is hostile markup."""
    helpful = json.loads(edits_reply(HELPFUL))
    helpful["edits"][0]["rationale"] = f"capitals fix word items {EVIL}"
    helpful["edits"][0]["evidence"] = ["word-0", "word-1"]
    models["set"](
        ScriptedOptimizer([edits_reply(NEUTRAL), edits_reply(HARMFUL), json.dumps(helpful)])
    )
    return train(world)


class Page(HTMLParser):
    """The elements of a page by class, and every URL it references."""

    def __init__(self, text: str):
        super().__init__()
        self.classes: dict[str, list[dict[str, str | None]]] = {}
        self.urls: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for name in (a.get("class") or "").split():
            self.classes.setdefault(name, []).append(a)
        for key in ("src", "href", "xlink:href"):
            if a.get(key):
                self.urls.append(a[key])
        self._in_script = tag == "script"

    def handle_data(self, text):
        if self._in_script:
            self.scripts.append(text)

    def handle_endtag(self, tag):
        self._in_script = False


def embedded(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="skillopt-data">(.*?)</script>', text, re.S)
    assert m, "the page embeds its data"
    return json.loads(m.group(1))


def test_train_writes_the_page_and_names_it(three_steps):
    res, run_id, run = three_steps
    html = run / "report.html"
    assert html.is_file() and (run / "report.md").is_file()
    assert f"report: runs/{run_id}/report.html · report.md" in res.stdout
    text = html.read_text()
    p = Page(text)
    # self-contained: nothing but in-page anchors
    assert p.urls and all(u.startswith("#") for u in p.urls), p.urls
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    # one mark per step, one row per line of the best skill, tasks × steps cells
    state = json.loads((run / "state.json").read_text())
    assert len(p.classes["point"]) == len(state["steps"]) == 4
    best = (run / "best" / "SKILL.md").read_text()
    assert len(p.classes["blame-line"]) == len(best.splitlines())
    assert len(p.classes["cell"]) == len(VAL_TASKS) * 4
    assert [a["data-decision"] for a in p.classes["point"]] == [
        "initial",
        "rejected",
        "rejected",
        "accepted",
    ]


def test_the_numbers_are_the_runs(three_steps):
    _, run_id, run = three_steps
    d = report_data.build(run_id)
    summary = json.loads((run / "summary.json").read_text())
    state = json.loads((run / "state.json").read_text())
    assert [s["decision"] for s in d["steps"]] == ["initial", "rejected", "rejected", "accepted"]
    assert d["steps"][0]["val"] == summary["initial_val"] == 0.5
    assert d["steps"][3]["val"] == summary["best_val"] == 1.0
    assert [s["best"] for s in d["steps"]] == [0.5, 0.5, 0.5, 1.0]
    assert d["steps"][3]["fail_to_pass"] == ["word-3", "word-4"]
    assert d["steps"][3]["p_value"] == state["steps"][3]["gate"]["p_value"]
    assert d["steps"][3]["commit"] == state["steps"][3]["commit"]
    assert "+- Write WORD items in capitals." in d["steps"][3]["diff"]

    # the grid: the initial skill fails the word items, the accepted one passes all
    g = d["grid"]
    assert g["tasks"] == VAL_TASKS
    col = {c["step"]: c["cells"] for c in g["columns"]}
    assert {t: c["state"] for t, c in col[0].items()} == {
        "keep-3": "pass",
        "keep-4": "pass",
        "word-3": "fail",
        "word-4": "fail",
    }
    assert {t: c["state"] for t, c in col[3].items()} == dict.fromkeys(VAL_TASKS, "pass")
    assert {t for t, c in col[3].items() if c["flip"]} == {"word-3", "word-4"}
    # the harmful rule reverses every answer: what it was scored on failed, and the
    # race settled before the rest ran
    harmful = {t: c["state"] for t, c in col[2].items()}
    assert set(harmful.values()) <= {"fail", "not run"} and "fail" in harmful.values()
    assert g["flaky"] == []

    # spend: from the ledger, cumulative, and its last point is the run's total
    assert [p["at"] for p in d["spend"]] == ["step 0", "step 1", "step 2", "step 3", "test"]
    assert all(p["source"] == "ledger" for p in d["spend"])
    rolled = [p["rollouts"] for p in d["spend"]]
    assert rolled == sorted(rolled) and rolled[0] == 4  # the baseline: 4 val tasks
    acct = summary["accounting"]
    assert d["spend"][-1]["rollouts"] == acct["target_rollouts"]
    assert d["spend"][-1]["from_store"] == acct["cached_rollouts"]
    assert d["spend"][-1]["optimizer_calls"] == acct["optimizer_calls"] > 0

    assert [t["label"] for t in d["test"]] == ["no skill", "initial", "best"]
    assert d["test"][2]["mean"] == summary["test"]["best"]["mean"]


def test_blame_tags_each_line_with_its_step_and_edit(three_steps):
    _, run_id, run = three_steps
    best = (run / "best" / "SKILL.md").read_text().splitlines()
    lines = api.run_blame(run_id)
    assert [b["text"] for b in lines] == best
    assert [b["line"] for b in lines] == list(range(1, len(best) + 1))
    added = [b for b in lines if b["step"] != 0]
    assert [b["text"] for b in added] == [f"- {HELPFUL}"]
    (line,) = added
    assert line["decision"] == "accepted" and line["edit"] == 0 and line["op"] == "add"
    assert line["evidence"] == ["word-0", "word-1"]
    assert line["commit"] == json.loads((run / "state.json").read_text())["steps"][3]["commit"]
    assert all(b["decision"] == "initial" for b in lines if b["step"] == 0)

    res = runner.invoke(app, ["blame", run_id])
    assert res.exit_code == 0, res.output
    row = next(r for r in res.stdout.splitlines() if "edit 0 (add)" in r)
    assert re.match(rf"\s*{line['line']}\s+3\s+accepted\s", row), row
    assert "- Write WORD" in row


def test_hostile_text_is_shown_not_run(three_steps):
    """A rationale carrying markup is text on the page: it neither closes the data
    script nor adds an element, and the embedded data keeps it verbatim."""
    _, _, run = three_steps
    text = (run / "report.html").read_text()
    assert "<script>alert(1)" not in text and "<img src=x" not in text
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in text
    assert len(Page(text).scripts) == 2  # the data and the tooltip script
    d = embedded(text)
    rationales = [e["rationale"] for s in d["steps"] for e in s["edits"]]
    assert f"capitals fix word items {EVIL}" in rationales


def test_report_command_rewrites_the_page_and_compares_two_runs(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    _, first, run_a = train(world)
    models["set"](ScriptedOptimizer([edits_reply(NEUTRAL)]))
    # its own store: the first run's optimizer replies would be served again
    _, second, run_b = train(world, "--store", "runs/second.sqlite")

    (run_a / "report.html").unlink()
    res = runner.invoke(app, ["report", first])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == f"report: runs/{first}/report.html"
    assert (run_a / "report.html").is_file()

    elsewhere = world["root"] / "out" / "page.html"
    res = runner.invoke(app, ["report", first, "--html", str(elsewhere)])
    assert res.exit_code == 0 and elsewhere.is_file()

    res = runner.invoke(app, ["report", first, second])
    assert res.exit_code == 0, res.output
    page_path = run_a / f"compare-{second}.html"
    assert res.stdout.strip() == f"report: runs/{first}/compare-{second}.html"
    text = page_path.read_text()
    p = Page(text)
    # both curves on one chart: one mark per step of each run (the first stops after
    # step 1, whose acceptance saturates validation)
    series = [a["data-series"] for a in p.classes["point"]]
    assert series.count("0") == 2 and series.count("1") == 4
    # the diff between the best skills: the first learned the rule, the second not
    assert f'<span class="del">-- {HELPFUL}</span>' in text
    d = embedded(text)
    assert [r["run_id"] for r in d["runs"]] == [first, second]
    assert [r["summary"]["best_val"] for r in d["runs"]] == [1.0, 0.5]
    assert "different suites" not in text and "different suites" not in res.stderr
    # the settings the two runs differ in come first: the second used its own store
    assert "They differ in 1 setting: <code>store</code>" in text
    assert text.index('id="settings"') < text.index('id="score"')
    differ = text.split('<table class="differ">')[1].split("</table>")[0]
    assert "<code>store</code>" in differ and "&quot;runs/second.sqlite&quot;" in differ


def test_comparing_runs_of_different_suites_says_so(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    _, first, _ = train(world)
    other = world["root"] / "tasks" / "other.yaml"
    other.write_text(world["suite"].read_text())
    res = runner.invoke(
        app,
        ["train", str(world["skill"]), "--tasks", str(other)]
        + train_args(world)[4:]
        + ["--store", "runs/other.sqlite"],
    )
    assert res.exit_code == 0, res.output
    second = res.stdout.split("history: git log skillopt/")[1].split()[0]
    res = runner.invoke(app, ["report", first, second])
    assert res.exit_code == 0, res.output
    assert "trained on different suites" in res.stderr
    page_path = world["root"] / "runs" / first / f"compare-{second}.html"
    assert "trained on different suites" in page_path.read_text()


def test_an_unknown_run_is_one_line_and_exit_2(world):
    res = runner.invoke(app, ["report", "no-such-run"])
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "no-such-run" in res.stderr


def test_a_report_that_fails_does_not_fail_the_run(world, models, monkeypatch):
    def broken(d):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(page, "render", broken)
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    res, run_id, run = train(world)
    assert not (run / "report.html").exists()
    assert (run / "report.md").is_file() and (run / "best" / "SKILL.md").is_file()
    assert f"report: runs/{run_id}/report.md" in res.stdout
    assert "report.html could not be written (RuntimeError: drawing failed)" in res.stderr
    assert f"`skillopt report {run_id}` tries again" in res.stderr
    events = (run / "events.jsonl").read_text()
    assert '"report_failed"' in events


def test_without_the_store_spend_comes_from_the_events(world, models, tmp_path, monkeypatch):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    _, run_id, run = train(world)
    with_ledger = report_data.build(run_id)
    (world["root"] / "runs" / "rollouts.sqlite").rename(tmp_path / "moved.sqlite")
    d = report_data.build(run_id)
    assert any("rollout store" in n for n in d["notes"])
    assert [p["source"] for p in d["spend"]] == ["events"] * len(d["spend"])
    # the counts agree with the ledger's; tokens and cost are unknown
    assert [(p["rollouts"], p["from_store"]) for p in d["spend"]] == [
        (p["rollouts"], p["from_store"]) for p in with_ledger["spend"]
    ]
    assert {p["tokens"] for p in d["spend"]} == {None}
    html = page.render(d)
    assert "rollout store" in html  # the page says why


def test_a_task_one_skill_scored_both_ways_is_flaky(three_steps):
    """The incumbent is scored again at every step; when the same skill's verdict on
    a task differs, the grid marks it flaky."""
    _, run_id, run = three_steps
    path = run / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    again = next(
        e
        for e in events
        if e.get("label") == "step 3 · val (incumbent)" and e.get("task_id") == "keep-3"
    )
    assert again["passed"] is True
    path.write_text(path.read_text() + json.dumps(again | {"passed": False}) + "\n")
    d = report_data.build(run_id)
    assert d["grid"]["flaky"] == ["keep-3"]
    p = Page(page.render(d))
    assert [a["data-task"] for a in p.classes["flaky"]] == ["keep-3"]


def test_settings_on_the_page_have_no_secrets(three_steps):
    _, run_id, run = three_steps
    config = (run / "run.yaml").read_text()
    (run / "run.yaml").write_text(
        config.replace("settings:\n", "settings:\n  api_key: sk-live-1234567890\n", 1)
    )
    text = page.render(report_data.build(run_id))
    assert "sk-live-1234567890" not in text
    assert "api_key" in text and "***" in text
    # a chat run's table leaves out the agent CLIs' and Ray's sections, and says so
    table = text.split('<table class="settings">')[1].split("</table>")[0]
    assert "<code>target</code>" in table and "claude_code." not in table
    assert "codex." not in table and "ray." not in table
    assert "<code>claude_code.*</code>" in text


def test_files_named_on_the_page_exist(three_steps):
    _, run_id, _ = three_steps
    d = report_data.build(run_id)
    for name, where in d["files"].items():
        if name != "branch":
            assert Path(where).exists(), name


def test_a_run_a_budget_stopped_has_its_page_and_says_how_to_go_on(world, models):
    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    res = runner.invoke(app, train_args(world, "--epochs", "3", "--max-target-rollouts", "6"))
    assert res.exit_code == 3, res.output
    run_id = res.stderr.split("`skillopt train --resume ")[1].split()[0]
    text = (world["root"] / "runs" / run_id / "report.html").read_text()
    assert "Stopped by the budget --max-target-rollouts" in text
    assert f"skillopt train --resume {run_id}" in text
    assert 'class="test-chart' not in text and "The test split was not run." in text


def test_an_interrupted_run_is_reported_from_its_checkpoint(world, models):
    """Ctrl-C inside step 1: no page is written at the end, `skillopt report` draws
    what the checkpoint holds (the initial skill, no test split)."""
    models["set"](ScriptedOptimizer([edits_reply(HARMFUL)], crash_at=1, crash=KeyboardInterrupt))
    res = runner.invoke(app, train_args(world, "--epochs", "2"))
    assert res.exit_code == 130, res.output
    run_id = res.stderr.split("`skillopt train --resume ")[1].split("`")[0]
    run = world["root"] / "runs" / run_id
    assert not (run / "report.html").exists()
    res = runner.invoke(app, ["report", run_id])
    assert res.exit_code == 0, res.output
    text = (run / "report.html").read_text()
    p = Page(text)
    assert len(p.classes["point"]) == 1  # step 0
    assert 'class="status-running"' in text
    assert len(p.classes["blame-line"]) == len(
        (world["skill"] / "SKILL.md").read_text().splitlines()
    )


def test_open_hands_the_page_to_the_users_browser(world, models, tmp_path):
    """`--open` starts the browser `$BROWSER` names (Python's webbrowser) on the
    page's file:// URL; a real process, its argument recorded."""
    import os
    import subprocess
    import sys

    models["set"](ScriptedOptimizer([edits_reply(HELPFUL)]))
    _, run_id, run = train(world)
    seen = tmp_path / "seen.txt"
    opener = tmp_path / "opener.sh"
    opener.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {seen}\n')
    opener.chmod(0o755)
    env = {**os.environ, "BROWSER": str(opener)}
    done = subprocess.run(
        [sys.executable, "-m", "skillopt", "report", run_id, "--open"],
        cwd=world["root"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert seen.read_text() == (run / "report.html").resolve().as_uri()


def test_bidirectional_controls_never_reach_the_page():
    """An unclosed right-to-left override in a task id or an answer would reverse the
    rest of its line: the page carries none, in what it shows or in its data."""
    from skillopt.runs.html.document import document

    rlo = "t\u202e-01"
    page = document(
        f"run {rlo}",
        f"<h1>{rlo}</h1>",
        [("steps", "Steps \u2066x\u2069")],
        f"<p>flipped {rlo}</p>",
        {"task": rlo, "answer": "\u202bdone"},
    )
    assert not any(c in page for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert "t-01" in page and '"answer":"done"' in page
