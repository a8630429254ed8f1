"""Reflection: parsing optimizer replies, the repair re-ask, skipped minibatches, and
what the optimizer's prompt contains."""

from __future__ import annotations

import json

import pytest
from helpers import write_suite

from skillopt.errors import ModelError
from skillopt.models import ScriptedModel
from skillopt.models.scripted import Call
from skillopt.optimize.base import TextResult
from skillopt.optimize.memory import Memory
from skillopt.optimize.prompting import FIELD_LIMIT, render_trajectories
from skillopt.optimize.reflect import LLMOptimizer, Proposal, ProposalRequest
from skillopt.optimize.replies import parse_edits
from skillopt.rollouts.engine import Rollout
from skillopt.skill.document import Skill
from skillopt.skill.edits import Edit
from skillopt.suite.loader import load_suite

SKILL_TEXT = (
    "---\nname: codes\ndescription: Normalise product codes.\n---\n"
    "# Codes\n\n## Rules\n\n- Uppercase the letters.\n"
)

ONE_EDIT = {
    "op": "add",
    "anchor": "- Uppercase the letters.",
    "content": "- Put a hyphen between letters and digits.",
    "rationale": "the hyphen was missing",
    "evidence": ["pc-1"],
}
GOOD = json.dumps({"edits": [ONE_EDIT]})


# -------------------------------------------------------------------- parse_edits
class TestParseEdits:
    def test_clean_reply(self):
        edits = parse_edits(GOOD, "failures")
        assert edits == [
            Edit(
                "add",
                anchor="- Uppercase the letters.",
                content="- Put a hyphen between letters and digits.",
                rationale="the hyphen was missing",
                evidence=("pc-1",),
                source="failures",
            )
        ]

    def test_json_fence(self):
        reply = "Here you go:\n```json\n" + GOOD + "\n```\nGood luck."
        assert parse_edits(reply, "failures")[0].content.startswith("- Put a hyphen")

    def test_json_inside_prose(self):
        reply = "I suggest the following change. " + GOOD + " That should fix pc-1."
        edits = parse_edits(reply, "successes")
        assert len(edits) == 1
        assert edits[0].source == "successes"

    def test_bare_list(self):
        reply = json.dumps([ONE_EDIT, {"op": "delete", "anchor": "old"}])
        edits = parse_edits(reply, "failures")
        assert [e.op for e in edits] == ["add", "delete"]
        assert edits[1].anchor == "old"
        assert edits[1].content is None

    def test_empty_edit_list(self):
        assert parse_edits('{"edits": []}', "successes") == []

    def test_nulls_and_blank_strings_become_none(self):
        reply = json.dumps(
            {"edits": [{"op": "add", "anchor": "", "section": None, "content": "x"}]}
        )
        [e] = parse_edits(reply, "failures")
        assert e.anchor is None and e.section is None
        assert e.rationale == "" and e.evidence == ()

    def test_extra_fields_ignored(self):
        reply = json.dumps({"edits": [{**ONE_EDIT, "confidence": 0.9}], "thoughts": "x"})
        assert len(parse_edits(reply, "failures")) == 1

    @pytest.mark.parametrize(
        "reply",
        [
            '{"edits": [{"op": "add", ',
            "no json here at all",
            "",
            "{'edits': [{'op': 'add', 'content': 'x'}]}",  # a Python repr, not JSON
        ],
    )
    def test_malformed_json(self, reply):
        with pytest.raises(ValueError, match="no JSON"):
            parse_edits(reply, "failures")

    def test_missing_edits_field(self):
        with pytest.raises(ValueError, match="edits") as info:
            parse_edits('{"changes": []}', "failures")
        assert "required" in str(info.value).lower()

    def test_unknown_op_names_the_field(self):
        reply = json.dumps({"edits": [ONE_EDIT, {"op": "insert", "content": "x"}]})
        with pytest.raises(ValueError, match=r"edits\.1\.op"):
            parse_edits(reply, "failures")

    def test_op_missing_names_the_field(self):
        with pytest.raises(ValueError, match=r"edits\.0\.op"):
            parse_edits('{"edits": [{"content": "x"}]}', "failures")

    def test_edits_not_a_list(self):
        with pytest.raises(ValueError, match="edits"):
            parse_edits('{"edits": "add a rule"}', "failures")

    @pytest.mark.parametrize("op", ["replace", "delete"])
    def test_replace_or_delete_without_anchor(self, op):
        reply = json.dumps({"edits": [{"op": op, "anchor": "  ", "content": "x"}]})
        with pytest.raises(ValueError, match=rf"edits\.0: a {op} needs an anchor"):
            parse_edits(reply, "failures")

    @pytest.mark.parametrize("op", ["add", "replace"])
    def test_add_or_replace_without_content(self, op):
        reply = json.dumps({"edits": [ONE_EDIT, {"op": op, "anchor": "a", "content": None}]})
        with pytest.raises(ValueError, match=rf"edits\.1: an {op} needs content"):
            parse_edits(reply, "failures")


# ------------------------------------------------------------------- fixtures
@pytest.fixture
def tasks(tmp_path):
    path = write_suite(
        tmp_path / "codes.yaml",
        [
            {"id": "pc-1", "input": "abc 123", "expected": "ABC-123", "split": "train"},
            {"id": "pc-2", "input": "xy42", "expected": "XY-42", "split": "train"},
        ],
        prompt="Normalise this product code: {input}",
    )
    return {t.id: t for t in load_suite(path).tasks}


def rollout(task_id: str, answer: str | None, score: float, feedback: str, **kw) -> Rollout:
    return Rollout(
        key=f"k-{task_id}",
        task_id=task_id,
        split="train",
        sample=0,
        skill_hash="h",
        scored=True,
        score=score,
        passed=score >= 1.0,
        feedback=feedback,
        answer=answer,
        **kw,
    )


def request(
    tasks, *, memory: Memory | None = None, rollouts=None, kind="failures", budget=3
) -> ProposalRequest:
    rollouts = (
        rollouts
        if rollouts is not None
        else [
            rollout("pc-1", "ABC123", 0.0, "expected 'ABC-123', got 'ABC123'"),
            rollout("pc-2", "xy-42", 0.0, "expected 'XY-42', got 'xy-42'"),
        ]
    )
    return ProposalRequest(
        skill=Skill.parse(SKILL_TEXT),
        kind=kind,
        rollouts=rollouts,
        tasks=tasks,
        budget=budget,
        memory=memory or Memory(),
    )


def user_prompt(model: ScriptedModel, call: int = 0) -> str:
    return model.calls[call].messages[-1]["content"]


# ------------------------------------------------------------------- LLMOptimizer
class TestPropose:
    def test_good_reply(self, tasks):
        model = ScriptedModel([GOOD])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.skipped is None
        assert p.calls == 1
        assert model.call_count == 1
        assert len(p.edits) == 1
        assert p.edits[0].source == "failures"
        assert p.edits[0].evidence == ("pc-1",)
        assert p.raw == GOOD
        assert p.usage.output_tokens > 0

    def test_successes_source(self, tasks):
        model = ScriptedModel([GOOD])
        p = LLMOptimizer(model).propose(request(tasks, kind="successes"))
        assert p.edits[0].source == "successes"
        assert "SOLVED" in user_prompt(model)

    def test_system_prompt_sent(self, tasks):
        model = ScriptedModel([GOOD])
        LLMOptimizer(model).propose(request(tasks))
        messages = model.calls[0].messages
        assert messages[0]["role"] == "system"
        assert "optimizer" in messages[0]["content"]
        assert [m["role"] for m in messages] == ["system", "user"]

    def test_bad_then_good_repairs_once(self, tasks):
        model = ScriptedModel(["I think you should add a hyphen rule.", GOOD])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.skipped is None
        assert p.calls == 2
        assert model.call_count == 2
        assert len(p.edits) == 1
        second = model.calls[1].messages
        assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
        assert second[2]["content"] == "I think you should add a hyphen rule."
        assert "the reply contains no JSON object" in second[-1]["content"]
        assert p.raw == GOOD

    def test_schema_error_is_quoted_in_repair(self, tasks):
        model = ScriptedModel(['{"edits": [{"op": "insert", "content": "x"}]}', GOOD])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.calls == 2 and p.edits
        assert "edits.0.op" in user_prompt(model, 1)

    def test_bad_twice_is_skipped(self, tasks):
        model = ScriptedModel(["not json", '{"edits": [{"op": "delete"}]}', GOOD])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.edits == []
        assert p.skipped.startswith("invalid reply after one repair")
        assert "needs an anchor" in p.skipped
        assert p.calls == 2
        assert model.call_count == 2  # only one repair

    def test_model_error_is_skipped(self, tasks):
        model = ScriptedModel([ModelError("provider down", kind="timeout")])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.edits == []
        assert p.skipped.startswith("optimizer call failed")
        assert "provider down" in p.skipped
        assert p.calls == 1  # the failed request is counted: the provider saw it
        assert p.error_kind == "timeout"

    def test_model_error_during_repair_is_skipped(self, tasks):
        model = ScriptedModel(["not json", ModelError("rate limited")])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.edits == []
        assert p.skipped.startswith("optimizer call failed")
        assert p.calls == 2

    def test_prompt_contains_everything_the_optimizer_needs(self, tasks):
        memory = Memory()
        memory.reject(
            1,
            [Edit("delete", anchor="- Uppercase the letters.")],
            -0.25,
            "worse on validation (-0.250)",
        )
        memory.skip(1, Edit("add", anchor="no such line", content="x"), "anchor_not_found")
        memory.note(0, "deletions hurt")
        model = ScriptedModel([GOOD])
        LLMOptimizer(model).propose(request(tasks, memory=memory, budget=3))
        prompt = user_prompt(model)
        skill = Skill.parse(SKILL_TEXT)
        assert skill.body in prompt
        assert "name: codes" not in prompt  # the body only, not the frontmatter
        for task_id, answer, feedback in [
            ("pc-1", "ABC123", "expected 'ABC-123', got 'ABC123'"),
            ("pc-2", "xy-42", "expected 'XY-42', got 'xy-42'"),
        ]:
            task = tasks[task_id]
            assert f"## Task {task_id}" in prompt
            assert task.prompt in prompt
            assert str(task.expected) in prompt
            assert answer in prompt
            assert feedback in prompt
        assert "Normalise this product code: abc 123" in prompt
        assert "at most 3 edits" in prompt
        assert memory.render() in prompt
        assert "delete:\n```\n- Uppercase the letters.\n```" in prompt
        assert "-0.250" in prompt
        assert "no such line" in prompt and "anchor_not_found" in prompt
        assert "deletions hurt" in prompt
        assert (
            "Size: at most 8 non-blank lines of `content` per edit (and 4000 characters) and "
            "24 lines for all your edits together; a larger edit is dropped without being "
            "applied." in prompt
        )
        assert "{{" not in prompt

    @pytest.mark.parametrize("kind", ["failures", "successes"])
    def test_prompt_states_the_content_limits_it_was_given(self, tasks, kind):
        model = ScriptedModel([GOOD])
        req = request(tasks, kind=kind)
        req.max_edit_lines, req.max_step_lines = 5, 11
        LLMOptimizer(model).propose(req)
        prompt = user_prompt(model)
        assert "at most 5 non-blank lines of `content` per edit (and 2500 characters) and 11" in (
            prompt
        )

    def test_huge_answer_is_truncated_with_marker(self, tasks):
        huge = "Z" * (FIELD_LIMIT + 4321)
        model = ScriptedModel([GOOD])
        LLMOptimizer(model).propose(request(tasks, rollouts=[rollout("pc-1", huge, 0.0, "wrong")]))
        prompt = user_prompt(model)
        assert "…[truncated 4321 characters]" in prompt
        assert "Z" * FIELD_LIMIT in prompt
        assert "Z" * (FIELD_LIMIT + 1) not in prompt

    def test_json_mode_params_passed_and_refusal_falls_back(self, tasks):
        class JsonModel(ScriptedModel):
            """A scripted model that offers a JSON mode the provider then refuses."""

            def json_params(self, schema, name):
                return {"response_format": {"name": name, "schema": schema}}

            def complete(self, prompt, **params):
                if params:
                    self.calls.append(Call(list(prompt), params, 0.0))
                    raise ModelError("response_format not supported", kind="bad_request")
                return super().complete(prompt, **params)

        model = JsonModel([GOOD])
        p = LLMOptimizer(model).propose(request(tasks))
        assert p.skipped is None and len(p.edits) == 1
        assert p.calls == 2
        first, second = model.calls
        assert first.params["response_format"]["name"] == "skill_edits"
        assert "edits" in first.params["response_format"]["schema"]["properties"]
        assert second.params == {}

    def test_proposal_round_trip(self, tasks):
        p = LLMOptimizer(ScriptedModel([GOOD])).propose(request(tasks))
        back = Proposal.from_dict(json.loads(json.dumps(p.to_dict())))
        assert back.edits == p.edits
        assert back.calls == p.calls and back.usage == p.usage and back.raw == p.raw


class TestRenderTrajectories:
    def test_missing_answer_and_steps(self, tasks):
        r = rollout(
            "pc-1",
            None,
            0.0,
            "no answer",
            trajectory={
                "steps": [
                    {"type": "tool", "command": "ls", "output": "a.txt"},
                    {"type": "call", "tool": "read", "input": {"p": 1}},
                ]
                + [{"type": "note", "text": f"n{i}"} for i in range(25)]
            },
        )
        text = render_trajectories([r], tasks)
        assert "Score: 0.00 (fail)" in text
        assert "tool: `ls` → a.txt" in text
        assert 'call: read({"p": 1})' in text
        assert "…[7 more steps truncated]" in text

    def test_pass_is_shown(self, tasks):
        text = render_trajectories([rollout("pc-2", "XY-42", 1.0, "exact match")], tasks)
        assert "Score: 1.00 (pass). Feedback: exact match" in text
        assert "XY-42" in text


class TestTextReplies:
    def test_slow_update_parses_guidance(self):
        model = ScriptedModel(['```json\n{"guidance": "  - keep hyphens\\n- uppercase  "}\n```'])
        s = Skill.parse(SKILL_TEXT)
        memory = Memory()
        memory.reject(2, [Edit("delete", anchor="rule nine")], -0.1, "worse")
        r = LLMOptimizer(model).slow_update(
            s, Skill.parse(SKILL_TEXT.replace("Uppercase", "Capitalise")), "pc-1 improved", memory
        )
        assert r.text == "- keep hyphens\n- uppercase"
        assert r.skipped is None and r.calls == 1
        prompt = user_prompt(model)
        assert "pc-1 improved" in prompt
        assert "Capitalise" in prompt and "Uppercase" in prompt
        assert "rule nine" in prompt

    def test_slow_update_wrong_key_repairs_then_skips(self):
        model = ScriptedModel(['{"notes": "x"}', '{"guidance": 3}'])
        s = Skill.parse(SKILL_TEXT)
        r = LLMOptimizer(model).slow_update(s, s, "same", Memory())
        assert r.text is None
        assert r.skipped.startswith("invalid reply after one repair")
        assert "'guidance'" in r.skipped
        assert "'guidance'" in user_prompt(model, 1)
        assert r.calls == 2

    def test_meta_notes_parses_notes(self):
        model = ScriptedModel(['Sure. {"notes": "- adds helped"}'])
        r = LLMOptimizer(model).meta_notes(3, "step 1: accepted")
        assert r.text == "- adds helped"
        prompt = user_prompt(model)
        assert "epoch 3" in prompt and "step 1: accepted" in prompt

    def test_meta_notes_empty_string_is_none(self):
        r = LLMOptimizer(ScriptedModel(['{"notes": "   "}'])).meta_notes(1, "h")
        assert r.text is None
        assert r.skipped is None

    def test_meta_notes_model_error(self):
        r = LLMOptimizer(ScriptedModel([ModelError("boom")])).meta_notes(1, "h")
        assert r.text is None
        assert r.skipped.startswith("optimizer call failed")


def test_the_failures_prompt_shows_the_solved_sample_in_its_own_section(tasks):
    model = ScriptedModel(['{"edits": []}', '{"edits": []}'])
    solved = rollout("pc-2", "XY-42", 1.0, "ok: matched the expected answer")
    req = request(tasks, rollouts=[rollout("pc-1", "ABC123", 0.0, "expected 'ABC-123'")])
    req.protect = [solved]
    LLMOptimizer(model).propose(req)
    prompt = model.calls[0].messages[-1]["content"]
    failed, kept = prompt.split("# Tasks the agent FAILED")[1].split(
        "# Solved tasks to keep solved\n"
    )
    kept = kept.split("# Where the run stands")[0]
    assert "## Task pc-1" in failed and "pc-2" not in failed
    assert "## Task pc-2" in kept and "pc-1" not in kept
    assert "```\nNormalise this product code: xy42\n```" in kept
    assert "```\nXY-42\n```" in kept and "Score: 1.00 (pass)." in kept
    assert "matched the expected answer" not in kept  # brief: no feedback, no steps
    assert "write no rule or example for them" in kept
    # with nothing solved the section says so; the prompt's shape stays the same
    LLMOptimizer(model).propose(request(tasks))
    empty = model.calls[1].messages[-1]["content"]
    assert "# Solved tasks to keep solved\n" in empty
    assert "(no task of this batch was solved)" in empty


def test_a_proposal_without_secrets_keeps_its_count_through_the_checkpoint(monkeypatch):
    key = "ghp_" + "0a1b2c3d4e5f" * 3
    monkeypatch.setenv("GITHUB_TOKEN", key)
    raw = json.dumps({"edits": [{"op": "add", "content": f"- token {key}"}]})
    p = Proposal([Edit("add", content=f"- token {key}")], raw=raw).without_secrets()
    assert p.secrets == 1 and p.edits[0].content == "- token ***" and key not in p.raw
    again = Proposal.from_dict(json.loads(json.dumps(p.to_dict())))
    assert again.secrets == 1 and again.without_secrets().secrets == 1  # nothing left to blank
    # a proposal with nothing blanked is written as before the count existed
    assert "secrets" not in Proposal([Edit("add", content="- x")]).without_secrets().to_dict()
    guidance = TextResult(f"- keep {key} safe").without_secrets()
    assert (guidance.text, guidance.secrets) == ("- keep *** safe", 1)
    assert TextResult(None, skipped="no reply").without_secrets().secrets == 0
