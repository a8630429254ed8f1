"""The audit trailers: written in one fixed format, read back as typed values, and
read without complaint from commits that lack some of them."""

from __future__ import annotations

from helpers import write_skill

from skillopt.skill.document import Skill
from skillopt.store.audit import Audit
from skillopt.store.trailers import StepTrailers, parse_trailers

GATED = StepTrailers(
    run="words-1",
    step=3,
    decision="accepted",
    epoch=1,
    kind="step",
    gate="strict",
    val=1.0,
    incumbent_val=0.5,
    n=4,
    delta=0.5,
    p_value=0.25,
    fail_to_pass=2,
    pass_to_fail=0,
    edits_applied=1,
    edits_skipped=0,
    skill_hash="abc123",
)
GATED_LINES = [
    ("Skillopt-Run", "words-1"),
    ("Skillopt-Step", "3"),
    ("Skillopt-Decision", "accepted"),
    ("Skillopt-Epoch", "1"),
    ("Skillopt-Kind", "step"),
    ("Skillopt-Gate", "strict"),
    ("Skillopt-Val", "0.500 -> 1.000 (n=4)"),
    ("Skillopt-Delta", "+0.500"),
    ("Skillopt-P-Value", "0.2500"),
    ("Skillopt-Flips", "fail->pass 2, pass->fail 0"),
    ("Skillopt-Edits", "1 applied, 0 skipped"),
    ("Skillopt-Skill-Hash", "abc123"),
]


def message(trailers: dict[str, str], body: str = "Edits:\n- [applied] add") -> str:
    return (
        "step 3: accepted\n\n" + body + "\n\n" + "".join(f"{k}: {v}\n" for k, v in trailers.items())
    )


def test_a_gated_step_is_written_in_order():
    assert list(GATED.to_trailers().items()) == GATED_LINES


def test_the_initial_commit_has_one_val_and_nothing_compared():
    initial = StepTrailers(run="r", step=0, decision="initial", val=0.5, n=4, skill_hash="h")
    assert list(initial.to_trailers().items()) == [
        ("Skillopt-Run", "r"),
        ("Skillopt-Step", "0"),
        ("Skillopt-Decision", "initial"),
        ("Skillopt-Val", "0.500 (n=4)"),
        ("Skillopt-Skill-Hash", "h"),
    ]
    assert not initial.gated
    assert StepTrailers.parse(message(initial.to_trailers())) == initial


def test_unknown_values_of_a_gated_step_are_written_as_n_a_and_read_as_none():
    nothing = StepTrailers(
        run="r",
        step=2,
        decision="rejected",
        epoch=1,
        kind="slow_update",
        gate="paired",
        n=0,
        fail_to_pass=0,
        pass_to_fail=0,
        edits_applied=0,
        edits_skipped=1,
    )
    t = nothing.to_trailers()
    assert t["Skillopt-Val"] == "n/a -> n/a (n=0)"
    assert t["Skillopt-Delta"] == "n/a" and t["Skillopt-P-Value"] == "n/a"
    assert StepTrailers.parse(message(t)) == nothing


def test_parse_reads_what_to_trailers_wrote():
    text = message(GATED.to_trailers())
    assert StepTrailers.parse(text) == GATED
    assert parse_trailers(text) == dict(GATED_LINES)


def test_missing_and_unreadable_trailers_are_none():
    old = message(
        {
            "Skillopt-Run": "r",
            "Skillopt-Step": "seven",
            "Skillopt-Val": "about half",
            "Skillopt-Delta": "+0.1x",
            "Skillopt-Edits": "some",
        },
        body="made by hand",
    )
    t = StepTrailers.parse(old)
    assert t.run == "r" and t.step is None and t.val is None and t.n is None
    assert t.delta is None and t.edits_applied is None and t.decision is None
    assert StepTrailers.parse("no trailers at all") == StepTrailers()


def test_the_audit_commit_message_is_exactly_the_format(tmp_path):
    skill_dir = write_skill(tmp_path / "skills", "caps")
    audit = Audit.create(skill_dir, tmp_path / "runs", "words-1")
    skill = Skill.load(skill_dir)
    evidence = StepTrailers(
        step=0, decision="initial", val=0.5, n=4, skill_hash=skill.hash, run="ignored"
    )
    sha = audit.commit(skill, "step 0: initial skill — val 0.500", "", evidence)
    assert audit.repo.commit(sha).message == (
        "step 0: initial skill — val 0.500\n\n"
        "Skillopt-Run: words-1\n"
        "Skillopt-Step: 0\n"
        "Skillopt-Decision: initial\n"
        "Skillopt-Val: 0.500 (n=4)\n"
        f"Skillopt-Skill-Hash: {skill.hash}\n"
    )
    edited = skill.with_body(skill.body + "\n- Shout.\n")
    sha = audit.commit(edited, "step 3: accepted — val 0.500 -> 1.000 (+0.500)", "Why.", GATED)
    assert audit.repo.commit(sha).message == (
        "step 3: accepted — val 0.500 -> 1.000 (+0.500)\n\nWhy.\n\n"
        + "".join(f"{k}: {v}\n" for k, v in GATED_LINES)
    )
    (initial, accepted) = audit.history()
    assert initial.evidence.val == 0.5 and initial.evidence.incumbent_val is None
    assert accepted.step == 3 and accepted.decision == "accepted"
    assert accepted.evidence == GATED
    assert accepted.trailers["Skillopt-Val"] == "0.500 -> 1.000 (n=4)"
