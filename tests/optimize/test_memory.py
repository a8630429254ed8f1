"""Optimizer memory: plain data that survives a JSON round trip, rendered for prompts."""

from __future__ import annotations

import json

from skillopt.optimize.memory import Memory, render_edit
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
    assert (
        "Step 2 — rejected (worse on validation (-0.125)), validation delta -0.125 — "
        "2 edits, gated together:" in rejected_part
    )
    assert render_edit(E1) in rejected_part and render_edit(E2) in rejected_part
    assert (
        "Step 3 — rejected (no validation task was scored for both), validation delta n/a"
        in rejected_part
    )
    assert render_edit(E3) in rejected_part
    assert "missing words" in not_applied_part
    assert "not applied (anchor_not_found)" in not_applied_part
    assert "missing words" not in rejected_part


def test_render_positive_delta_has_sign():
    m = Memory()
    m.reject(1, [E1], 0.05, "better by +0.050 but p=0.250 > 0.05")
    assert "validation delta +0.050" in m.render()


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
        assert f"\nrejected-{step}\n" not in text
        assert f"\nskipped-{step}\n" not in text
    for step in (7, 8, 9):
        assert f"\nrejected-{step}\n" in text
        assert f"\nskipped-{step}\n" in text
    assert text.index("rejected-7") < text.index("rejected-9")  # most recent last
    assert len([ln for ln in text.splitlines() if ln.startswith("Step ")]) == 6
    assert "(7 earlier rejected edits not shown)" in text
    assert len(m.rejected) == 10  # rendering does not forget


def test_render_notes():
    m = Memory()
    m.note(0, "first")
    m.note(1, "- second\n- third\n")
    # the notes' own bullets are not nested inside another bullet
    assert m.render_notes() == "After epoch 0:\nfirst\n\nAfter epoch 1:\n- second\n- third"


EXAMPLES = Edit(
    "add",
    section="Examples",
    content="Input: tj 192\nOutput: TJ-192\n\nInput: ab 7\nOutput: AB-7",
    rationale="worked examples in the cue's shape",
)


def test_accepted_edits_are_kept_and_summed_up_in_one_line():
    m = Memory()
    m.accept(2, [EXAMPLES], 0.25, val=0.75, flips=(2, 0))
    assert m.accepted == [
        {
            "step": 2,
            "edit": EXAMPLES.to_dict(),
            "delta": 0.25,
            "val": 0.75,
            "flips": {"fail_to_pass": 2, "pass_to_fail": 0},
        }
    ]
    text = m.render()
    assert "ACCEPTED" in text
    assert (
        "Step 2 — accepted, validation delta +0.250 (2 fail → pass, 0 pass → fail), "
        "validation score 0.750 — 1 edit:" in text
    )
    # the skill holds the block: one line says what was added where, not the block again
    assert "```\nInput: tj 192" not in text
    assert "- add under 'Examples': 'Input: tj 192\\nOutput: TJ-192" in text
    assert Memory.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_rejected_tie_shows_its_flips():
    m = Memory()
    m.reject(4, [EXAMPLES], 0.0, "tie: no improvement on validation", flips=(1, 1))
    text = m.render()
    assert "validation delta +0.000 (1 fail → pass, 1 pass → fail)" in text
    assert "Input: tj 192\nOutput: TJ-192\n\nInput: ab 7" in text  # not cut at 90 characters


def test_a_long_edit_is_not_clipped():
    long = Edit("replace", anchor="x" * 300, content="\n".join(f"line {i}" for i in range(40)))
    m = Memory()
    m.reject(1, [long], -0.1, "worse")
    m.skip(1, long, "ambiguous_anchor")
    text = m.render()
    assert text.count("x" * 300) == 2 and text.count("line 39") == 2
    assert "…" not in text


def test_fences_outlast_the_backticks_inside():
    assert render_edit(Edit("add", content="```\ncode\n```")) == (
        "add at the end of the skill:\n````\n```\ncode\n```\n````"
    )


def test_best_val_is_the_incumbent_or_an_accepted_score():
    m = Memory()
    assert m.best_val(None) is None
    assert m.best_val(0.5) == 0.5
    m.accept(1, [E1], 0.25, val=0.75)
    assert m.best_val(0.5) == 0.75
    assert m.best_val(0.875) == 0.875


def test_epoch_history_shows_not_applied_edits_and_no_nested_bullets():
    from step_records import batch, gate, initial

    from skillopt.training.history import epoch_history

    steps = [
        initial(),
        batch(
            1,
            "rejected",
            reason="tie: no improvement on validation",
            apply=[
                {"edit": EXAMPLES.to_dict(), "status": "applied", "detail": ""},
                {"edit": E3.to_dict(), "status": "anchor_not_found", "detail": "no line"},
            ],
            dropped=[{"edit": E2.to_dict(), "reason": "over the budget of 2 edits"}],
            gate=gate(
                delta=0.0,
                fail_to_pass=("val-secret-1",),
                pass_to_fail=("val-secret-2",),
                per_task={"val-secret-1": [0, 1], "val-secret-2": [1, 0]},
            ),
        ),
        batch(2, "no_candidate", epoch=2, reason="-"),
    ]
    text = epoch_history(steps, 1)
    assert text.startswith(
        "Step 1 (step): rejected, validation delta +0.000 (1 fail → pass, 1 pass → fail) — tie"
    )
    assert render_edit(EXAMPLES) in text
    assert render_edit(E3) + "\nNot applied: anchor_not_found: no line" in text
    assert render_edit(E2) + "\nNot applied: over the budget of 2 edits" in text
    assert "val-secret" not in text  # flip counts, never the validation tasks
    assert "Step 2" not in text  # another epoch
    assert not [ln for ln in text.splitlines() if ln.startswith("    -")]
    assert epoch_history(steps, 3) == "(no steps)"


def test_rejected_skills_survive_the_checkpoint_and_stay_out_of_prompts():
    m = Memory()
    m.reject(2, [E1, E2], -0.125, "worse", skill_hash="h-step-2")
    m.reject(3, [E3], 0.0, "tie")  # a rejection recorded before hashes were kept
    m.reject(5, [E3], 0.0, "tie", skill_hash="h-step-5")
    assert m.rejected_skills() == {"h-step-2": 2, "h-step-5": 5}
    restored = Memory.from_dict(json.loads(json.dumps(m.to_dict())))
    assert restored.rejected_skills() == {"h-step-2": 2, "h-step-5": 5}
    assert "h-step" not in restored.render()  # a hash tells the optimizer nothing
