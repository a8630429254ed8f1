"""Rubric drafts for harvested candidates, written by a model for the user to approve.

Invariants: the model is shown only a candidate's redacted, clipped texts (what the
review file will hold), so nothing a redaction removed reaches it; a model that
fails or replies without a rubric leaves that candidate's rubric empty with a note,
and the harvest goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from skillopt._util.text import clip, safe
from skillopt.harvest.candidates import Candidate, Candidates, scrubbed
from skillopt.models.base import Model
from skillopt.prompts import render_prompt
from skillopt.suite.scorers.structured import parse_json_answer

MAX_RUBRIC = 2000


def draft_rubrics(
    found: Candidates, model: Model, progress: Callable[[int, int], None] | None = None
) -> Candidates:
    """`found` with a drafted rubric (or a note why there is none) on each candidate."""
    drafted = []
    total = len(found.items)
    for n, cand in enumerate(found.items, 1):
        drafted.append(draft(cand, model))
        if progress is not None:
            progress(n, total)
    return replace(found, items=tuple(drafted))


def draft(cand: Candidate, model: Model) -> Candidate:
    """One candidate with its rubric drafted, or with a note when the model failed."""
    prompt = prompt_for(cand)
    try:
        reply = model.complete([{"role": "user", "content": prompt}])
    except Exception as exc:  # a model's failure is this draft's, never the harvest's
        reason = clip(safe(str(exc)) or type(exc).__name__, 200)
        return replace(cand, rubric_note=f"no draft: the model failed ({reason})")
    try:
        data = parse_json_answer(reply.text or "")
    except ValueError:
        data = None
    rubric = data.get("rubric") if isinstance(data, dict) else None
    if isinstance(rubric, list):
        rubric = "\n".join(f"- {str(r).lstrip('- ')}" for r in rubric)
    if not isinstance(rubric, str) or not rubric.strip():
        return replace(cand, rubric_note="no draft: the model's reply held no rubric")
    # the reply is text from outside too: redacted like everything else written
    text = scrubbed(rubric.strip(), MAX_RUBRIC, Counter())
    return replace(cand, rubric=text, rubric_note="")


def prompt_for(cand: Candidate) -> str:
    """The drafting prompt for one candidate, from its redacted texts only."""
    context = [f"working directory: {cand.cwd or 'unknown'}"]
    if cand.reads:
        context.append("files it read: " + ", ".join(cand.reads))
    tools = ", ".join(f"{name} x{n}" for name, n in cand.tools) or "none"
    return render_prompt(
        "harvest_rubric",
        request=cand.request,
        context="\n".join(context),
        what_happened=f"tools: {tools}\nits final answer: {cand.answer or '(none)'}",
        signal=cand.signal,
    )
