"""`skillopt tasks harvest` through the real CLI: sessions into a review file, the
review edited as a user would, and the kept entries into a suite that `eval` runs
offline; every error names the file, the entry and the field."""

from __future__ import annotations

import json

import yaml
from fakes.openai_server import FakeOpenAI
from helpers import write_skill
from typer.testing import CliRunner

from skillopt import api
from skillopt.models.scripted import ScriptedModel
from skillopt.suite.loader import load_suite

from .transcripts import Claude, Codex

KEY = "sk-ant-api03-Zx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaZx9Qw2Lm7Rt5Yp3Kd8Hs1Vb6Nc4Gf0JaAA"
SECRETS = (KEY, "hunter2-Secret!", "pg-s3cret-99")


def run(*args: str):
    from skillopt.cli.main import app

    return CliRunner().invoke(app, ["tasks", "harvest", *args])


def sessions(root):
    claude, codex = root / "claude", root / "codex"
    Claude().user(
        "Check config.env, my password is hunter2-Secret! and DB_PASSWORD=pg-s3cret-99"
    ).tool("Read", file_path="/w/proj/config.env").result(f"1\tANTHROPIC_API_KEY={KEY}").say(
        "It sets the key."
    ).user("Print the version of the parser").say("1.2.3").write(claude)
    Codex().user(
        "Check config.env, my password is hunter2-Secret! and DB_PASSWORD=pg-s3cret-99"
    ).shell("cat config.env", f"ANTHROPIC_API_KEY={KEY}\n").say(
        f"It sets ANTHROPIC_API_KEY={KEY}"
    ).write(codex)
    return claude, codex


def test_harvest_review_and_suite_round_trip_then_eval_offline(isolated):
    claude, codex = sessions(isolated)
    res = run("--from", str(claude), "--from", str(codex), "-o", "review.yaml")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[:4] == [
        "read 2 files: sessions 1 claude-code, 1 codex; 19 lines",
        "candidates: 2 (3 requests found, 1 merged as near-duplicates); signals: none",
        "redacted: 5 (anthropic-key 1, password 2, secret-assignment 2)",
        "review file: review.yaml",
    ]
    assert "skillopt tasks harvest --reviewed review.yaml -o tasks/NAME.yaml" in res.output
    text = (isolated / "review.yaml").read_text()
    assert not any(s in text or s in res.output for s in SECRETS)
    assert text.startswith("# skillopt harvest: candidate tasks")
    review = yaml.safe_load(text)
    assert review["harvest"]["redactions"] == {
        "anthropic-key": 1,
        "password": 2,
        "secret-assignment": 2,
    }
    first, second = review["candidates"]
    assert list(first) == [
        "id", "keep", "request", "context", "what_happened", "signal", "expected", "rubric", "scorer", "seen",
    ]  # fmt: skip
    assert first["request"] == (
        "Check config.env, my password is [REDACTED:password] and "
        "DB_PASSWORD=[REDACTED:secret-assignment]"
    )
    assert first["context"] == {"cwd": "/w/proj", "files_read": ["/w/proj/config.env"]}
    assert first["what_happened"] == {"tools": {"Read": 1}, "answer": "It sets the key."}
    assert [s["agent"] for s in first["seen"]] == ["claude-code", "codex"]
    assert (first["keep"], second["scorer"]) == (False, "contains")

    # the user reviews: keeps both, one with an answer, one with a rubric (and pastes a key)
    first.update(keep=True, rubric=f"- names the two settings\n- never prints {KEY}")
    second.update(keep=True, expected="1.2.3")
    (isolated / "review.yaml").write_text(yaml.safe_dump(review))
    res = run("--reviewed", "review.yaml", "-o", "tasks/mine.yaml")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        "wrote tasks/mine.yaml: 2 items (train 0 · val 1 · test 1) · scorers: contains 1, judge 1",
        "left out: 0 (keep: false in review.yaml)",
        "redacted in your edits: 1 (anthropic-key 1)",
    ]
    suite_text = (isolated / "tasks" / "mine.yaml").read_text()
    assert not any(s in suite_text for s in SECRETS)
    suite = load_suite(isolated / "tasks" / "mine.yaml")
    assert {t.id for t in suite.tasks} == {first["id"], second["id"]}

    # the suite runs offline (the rubric item needs a judge, so only the other is kept)
    items = [i for i in yaml.safe_load(suite_text)["items"] if i["id"] == second["id"]]
    (isolated / "tasks" / "answer.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "answer",
                "prompt": "{input} 1.2.3",
                "scorer": "contains",
                "items": [{**items[0], "split": "test"}],
            }
        )
    )
    skill = write_skill(isolated / "skills", "demo")
    from skillopt.cli.main import app

    res = CliRunner().invoke(
        app, ["eval", str(skill), "--tasks", "tasks/answer.yaml", "--target", "scripted/echo"]
    )
    assert res.exit_code == 0, res.output
    assert "1.000" in res.stdout


def test_errors_name_the_file_the_entry_and_the_field(isolated):
    claude, _ = sessions(isolated)
    assert run("--from", str(claude), "-o", "review.yaml").exit_code == 0
    again = run("--from", str(claude), "-o", "review.yaml")
    assert (
        again.exit_code == 2
        and "review.yaml: field '-o': already exists: pass --force" in again.output
    )
    review = yaml.safe_load((isolated / "review.yaml").read_text())
    entry = review["candidates"][0]

    def reviewed(**change) -> str:
        entry.update(change)
        (isolated / "review.yaml").write_text(yaml.safe_dump(review))
        res = run("--reviewed", "review.yaml", "-o", "tasks/t.yaml", "--force")
        assert res.exit_code == 2, res.output
        return res.output.replace("\n", " ")

    ident = entry["id"]
    assert "no entry is kept" in reviewed()
    assert f"review.yaml: item '{ident}': field 'expected': kept, but has neither" in reviewed(
        keep=True
    )
    assert f"item '{ident}': field 'keep': must be true or false" in reviewed(keep="yes")
    out = reviewed(keep=True, rubric="- right", rubric_draft=True)
    assert f"item '{ident}': field 'rubric_draft': the rubric is a model's draft" in out
    out = reviewed(rubric="", rubric_draft=False, expected="x", scorer="fuzzy")
    assert f"item '{ident}': field 'scorer': must be one of contains" in out
    missing = run("--reviewed", "nope.yaml", "-o", "tasks/t.yaml")
    assert (
        missing.exit_code == 2 and "nope.yaml: field '--reviewed': no such file" in missing.output
    )
    none = run("-o", "r2.yaml")
    assert (
        none.exit_code == 2 and "--from" in none.output and "none is read by default" in none.output
    )


def test_rubric_drafts_come_from_the_redacted_candidate_and_a_failure_is_a_note(isolated):
    claude, codex = sessions(isolated)
    replies = iter(['{"rubric": "- names ANTHROPIC_API_KEY\\n- says DEBUG"}', "no json here"])
    model = ScriptedModel(lambda messages: next(replies))
    result = api.harvest([claude, codex], "review.yaml", judge=model)
    assert (result.drafted, result.draft_notes) == (
        1,
        ("no draft: the model's reply held no rubric",),
    )
    sent = json.dumps([c.messages for c in model.calls])
    assert "[REDACTED:password]" in sent and not any(s in sent for s in SECRETS)
    first, second = yaml.safe_load((isolated / "review.yaml").read_text())["candidates"]
    assert (first["rubric"], first["rubric_draft"]) == (
        "- names ANTHROPIC_API_KEY\n- says DEBUG",
        True,
    )
    assert second["rubric"] == "" and second["rubric_note"].startswith("no draft")


def test_a_judge_over_http_is_sent_no_secret_and_its_failure_never_stops_the_harvest(isolated):
    claude, codex = sessions(isolated)
    failing: list[bool] = []

    def answer(body: dict) -> str:
        if failing:
            raise RuntimeError("down")  # answered with a 500
        return '{"rubric": "- right"}'

    with FakeOpenAI(answer) as server:
        (isolated / "skillopt.yaml").write_text(
            f"models:\n  openai/loopback: {{api_base: '{server.base_url}', retries: 0}}\n"
        )
        res = run(
            "--from",
            str(claude),
            "--from",
            str(codex),
            "-o",
            "r.yaml",
            "--judge",
            "openai/loopback",
            "--json",
            "-",
        )
        assert res.exit_code == 0, res.output
        assert len(server.requests) == 2
        sent = json.dumps([r["body"] for r in server.requests])
        assert "Check config.env" in sent and not any(s in sent for s in SECRETS)
        data = json.loads(res.stdout)
        assert data["drafted"] == 2 and data["redactions"]["anthropic-key"] == 1
        failing.append(True)  # the server fails every request now
        res = run("--from", str(claude), "-o", "r2.yaml", "--judge", "openai/loopback")
        assert res.exit_code == 0, res.output
        assert "rubrics drafted: 0; without a draft: 2" in res.stdout
