"""The built-in components, registered through the same calls a plugin makes (see
`skillopt.plugins`). Every component is named by a `"module:attr"` string, so
registering them imports nothing: a component's module loads on its first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillopt.plugins.catalog import Registry

# The built-in scorers, the only list of them: name -> (where the class is, in
# `skillopt.suite.scorers`, and what it checks). A class is imported when its name is
# first looked up.
SCORERS = {
    "exact": ("text:Exact", "the answer equals `expected` (stripped; `ignore_case`)"),
    "normalized": ("text:Normalized", "equal after normalising case, spacing and punctuation"),
    "contains": ("text:Contains", "every `expected` string appears in the answer"),
    "regex": ("text:Regex", "the answer matches `pattern` (or `expected` as a pattern)"),
    "number": ("text:Number", "the first number is within `tolerance` / `relative` of `expected`"),
    "choice": ("text:Choice", "the answer names exactly the expected option"),
    "json": ("structured:Json", "the answer's JSON holds every field of `expected`"),
    "python": (
        "code:Python",
        "a Python function `(answer, expected, task) -> bool | float | mapping | Score`",
    ),
    "command": ("code:Command", "a verifier program reads the answer (and the workspace)"),
    "judge": ("judge:Judge", "an LLM grades the answer against a `rubric`"),
    "trigger": (
        "trigger:Trigger",
        "the agent loaded the skill exactly when the item's `should_trigger` says so",
    ),
    "all": (
        "composite:All",
        "every part (`of`, a list of scorers) passes; the mean of their values",
    ),
}


def register(registry: Registry) -> None:
    for name, (where, help) in SCORERS.items():
        registry.scorer(name, f"skillopt.suite.scorers.{where}", help=help)

    registry.harness(
        "chat",
        "skillopt.harness.chat:ChatHarness.build",
        takes_model=True,
        help="the skill is the system prompt of one model call",
    )
    registry.harness(
        "router",
        "skillopt.harness.router:RouterHarness.build",
        takes_model=True,
        help="the model only picks which listed skill it would load (the library's and "
        "this one), from their names and descriptions",
    )
    registry.harness(
        "routed",
        "skillopt.harness.routed:RoutedHarness.build",
        takes_model=True,
        help="the model picks a listed skill as the router does, then answers the task "
        "with the skill it picked (implicit invocation on a chat model)",
    )
    registry.harness(
        "claude-code",
        "skillopt.harness.claude_code:ClaudeCodeHarness.build",
        help="`claude -p` in a workspace with the skill installed (settings: claude_code)",
    )
    registry.harness(
        "codex",
        "skillopt.harness.codex:CodexHarness.build",
        help="`codex exec` in a workspace with the skill installed (settings: codex)",
    )
    registry.harness(
        "command",
        "skillopt.harness.command:CommandHarness.build",
        help="any program, given as an argv template (settings: command)",
    )

    registry.optimizer(
        "exemplars",
        "skillopt.optimize.exemplars:ExemplarOptimizer.build",
        help="offline: turns failed training tasks into worked examples, no model calls",
    )

    for gate, help in (
        ("strict", "keep a candidate that scores higher on validation"),
        ("margin", "keep it when it scores higher by more than `min_delta`"),
        ("paired", "keep it when a paired permutation test gives p <= `alpha`"),
        (
            "no-regression",
            "keep it when it scores higher and turns no validation task from pass to fail "
            "(at most `max_regressions`)",
        ),
    ):
        factory = gate.replace("-", "_")  # the class method's name
        registry.gate(gate, f"skillopt.optimize.gate:ThresholdGate.{factory}", help=help)

    registry.model_provider(
        "local",
        "skillopt.models.local:build",
        help="the embedded offline model (local/gemma-3-270m)",
    )
    registry.model_provider(
        "scripted",
        "skillopt.models.scripted:build",
        help="scripted/echo, or scripted/<module>:<function> (tests, benchmarks)",
    )
