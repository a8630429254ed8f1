"""Optimizer memory: plain data that survives a JSON round trip, rendered for prompts."""

from __future__ import annotations

import json

from skillopt.optimize.memory import Memory
from skillopt.skill.edits import Edit

E1 = Edit("add", anchor="## Rules", content="- Always uppercase the prefix.", evidence=("t1",))
E2 = Edit("delete", anchor="Old advice here.")
E3 = Edit("replace", anchor="two digits", content="three digits")


def filled() -> Memory:
    m = Memory()
    m.reject(2, [E1, E2], -0.125, "worse on validation (-0.125)")
    m.reject(3, [E3], None, "no validation task was scored for both")
    m.skip(2, Edit("replace", anchor="missing words", content="x"), "anchor_not_found")
    m.note(1, "  - adds under Rules helped  ")
    m.note(2, "   ")  # blank notes are not kept
    return m


def test_reject_skip_note_record_plain_data():
    m = filled()
    assert [r["step"] for r in m.rejected] == [2, 2, 3]
    assert m.rejected[0]["edit"] == E1.to_dict()
    assert m.rejected[0]["delta"] == -0.125
    assert m.rejected[2]["delta"] is None
    assert m.not_applied == [
        {
            "step": 2,
            "edit": Edit("replace", anchor="missing words", content="x").to_dict(),
            "reason": "anchor_not_found",
        }
    ]
    assert m.meta_notes == [{"epoch": 1, "notes": "- adds under Rules helped"}]


def test_round_trip_through_json():
    m = filled()
    back = Memory.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back == m
    assert back.render() == m.render()
    assert back.render_notes() == m.render_notes()


def test_from_dict_none_and_empty():
    assert Memory.from_dict(None) == Memory()
    assert Memory.from_dict({}) == Memory()
    assert (
        Memory.from_dict(
            {"rejected": [{"step": 1, "edit": E2.to_dict(), "delta": 0.0, "reason": "tie"}]}
        ).rejected[0]["reason"]
        == "tie"
    )


def test_from_dict_copies_lists():
    data = filled().to_dict()
    m = Memory.from_dict(data)
    m.skip(9, E2, "invalid")
    assert len(data["not_applied"]) == 1
    assert len(m.not_applied) == 2


def test_render_empty():
    assert Memory().render() == "(nothing yet)"
    assert Memory().render_notes() == "(none yet)"


def test_render_shows_rejected_with_deltas_and_not_applied_with_reasons():
    text = filled().render()
    assert "REJECTED" in text
    assert "NOT APPLIED" in text
    rejected_part, not_applied_part = text.split("NOT APPLIED")
    assert "step 2: " + E1.describe(90) + " (validation delta -0.125)" in rejected_part
    assert "step 2: " + E2.describe(90) + " (validation delta -0.125)" in rejected_part
    assert "step 3: " + E3.describe(90) + " (validation delta n/a)" in rejected_part
    assert "missing words" in not_applied_part
    assert "— anchor_not_found" in not_applied_part
    assert "missing words" not in rejected_part


def test_render_positive_delta_has_sign():
    m = Memory()
    m.reject(1, [E1], 0.05, "better by +0.050 but p=0.250 > 0.05")
    assert "(validation delta +0.050)" in m.render()


def test_render_only_not_applied():
    m = Memory()
    m.skip(4, E2, "ambiguous_anchor")
    text = m.render()
    assert "REJECTED" not in text
    assert "NOT APPLIED" in text and "ambiguous_anchor" in text


def test_limit_keeps_most_recent():
    m = Memory()
    for step in range(10):
        m.reject(step, [Edit("delete", anchor=f"rejected-{step}")], 0.0, "tie")
        m.skip(step, Edit("delete", anchor=f"skipped-{step}"), "anchor_not_found")
    text = m.render(limit=3)
    for step in range(7):
        assert f"rejected-{step}'" not in text
        assert f"skipped-{step}'" not in text
    for step in (7, 8, 9):
        assert f"rejected-{step}'" in text
        assert f"skipped-{step}'" in text
    assert text.index("rejected-7") < text.index("rejected-9")  # most recent last
    assert len([ln for ln in text.splitlines() if ln.startswith("- step")]) == 6
    assert len(m.rejected) == 10  # rendering does not forget


def test_render_notes():
    m = Memory()
    m.note(0, "first")
    m.note(1, "second\n")
    assert m.render_notes() == "- after epoch 0: first\n- after epoch 1: second"
