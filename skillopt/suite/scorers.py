"""Scorers: turn an answer into a value in [0, 1], a pass flag and feedback text.

Contract: `Scorer(task, answer, ctx) -> Score`. A scorer judges the *answer*; when
it cannot (a judge model is down, a verifier binary is missing, a user function
raises) it raises `ScorerError` and the rollout is stored as unscored — never as
a score of 0. The feedback is written for the optimizer: it says what was
expected and how the answer differed.

Every scorer is built from a spec (a type name or a mapping with `type:` and its
parameters) and validated when the suite loads, before any model call.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import math
import re
import sys
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from skillopt.errors import ModelError, ScorerError


@dataclass(frozen=True)
class Score:
    value: float
    passed: bool
    feedback: str


@dataclass
class ScoreContext:
    """What a scorer may use besides the answer: the finished workspace (agent
    harnesses) and the judge model (the `judge` scorer)."""

    workspace: Path | None = None
    judge: Any = None  # a skillopt.models.Model


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = 1.0


class Scorer:
    """Base class. Subclasses set `type`, `Params`, `needs_expected`, and implement
    `score`. `spec` is the canonical mapping hashed into rollout fingerprints."""

    type = ""
    version = 1
    needs_expected = True
    Params: type[_Params] = _Params

    def __init__(self, params: _Params, base_dir: Path):
        self.params = params
        self.base_dir = base_dir

    @property
    def spec(self) -> dict:
        return {"type": self.type, "v": self.version, **self.params.model_dump()}

    def __call__(self, task, answer: str, ctx: ScoreContext | None = None) -> Score:
        return self.score(task, answer, ctx or ScoreContext())

    def score(self, task, answer: str, ctx: ScoreContext) -> Score:  # pragma: no cover
        raise NotImplementedError

    def check_item(self, expected: Any) -> str | None:
        """A problem with an item's `expected` for this scorer, or None."""
        if self.needs_expected and expected is None:
            return f"required by scorer {self.type!r}"
        return None

    def _graded(self, value: float, feedback_fail: str, feedback_pass: str = "correct") -> Score:
        """Pass at `threshold`; a partial pass still says what was missing."""
        value = min(1.0, max(0.0, float(value)))
        passed = value >= self.params.threshold
        if not passed:
            return Score(value, False, feedback_fail)
        if value < 1.0:
            return Score(
                value,
                True,
                f"passed at {value:.2f} (threshold {self.params.threshold:g}), but {feedback_fail}",
            )
        return Score(value, True, feedback_pass)


def _show(text: Any, limit: int = 200) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    s = s if len(s) <= limit else s[:limit] + "…"
    return repr(s) if isinstance(text, str) else s  # 1 and '1' must look different


def _diff_hint(expected: str, got: str) -> str:
    if expected.casefold() == got.casefold():
        return " (differs only in letter case)"
    if "".join(expected.split()) == "".join(got.split()):
        return " (differs only in whitespace)"
    if _normalize(expected) == _normalize(got):
        return " (differs only in case, spacing or punctuation)"
    if expected in got:
        return " (the expected text appears inside a longer answer)"
    return ""


# ---------------------------------------------------------------------- text match
class ExactParams(_Params):
    strip: bool = True
    ignore_case: bool = False


class Exact(Scorer):
    type = "exact"
    Params = ExactParams

    def score(self, task, answer, ctx):
        exp, got = str(task.expected), answer
        if self.params.strip:
            exp, got = exp.strip(), got.strip()
        same = exp.casefold() == got.casefold() if self.params.ignore_case else exp == got
        if same:
            return Score(1.0, True, "exact match")
        return Score(0.0, False, f"expected {_show(exp)}, got {_show(got)}{_diff_hint(exp, got)}")


def _normalize(text: str, punctuation: bool = True) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    if punctuation:
        text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


class NormalizedParams(_Params):
    punctuation: bool = True


class Normalized(Scorer):
    type = "normalized"
    Params = NormalizedParams

    def score(self, task, answer, ctx):
        exp = _normalize(str(task.expected), self.params.punctuation)
        got = _normalize(answer, self.params.punctuation)
        if exp == got:
            return Score(1.0, True, "match after normalising case, spacing and punctuation")
        return Score(
            0.0,
            False,
            f"expected {_show(str(task.expected))}, got {_show(answer.strip())}"
            " (compared ignoring case, spacing and punctuation)",
        )


class ContainsParams(_Params):
    ignore_case: bool = False


class Contains(Scorer):
    """`expected` is a string or a list of strings that must all appear; the
    value is the fraction found (pass needs `threshold`, default all)."""

    type = "contains"
    Params = ContainsParams

    def check_item(self, expected):
        if expected is None:
            return "required by scorer 'contains'"
        if isinstance(expected, list) and not all(
            isinstance(x, (str, int, float)) for x in expected
        ):
            return "must be a string or a list of strings for scorer 'contains'"
        if expected in ([], ""):
            return "must not be empty for scorer 'contains'"
        return None

    def score(self, task, answer, ctx):
        needles = task.expected if isinstance(task.expected, list) else [task.expected]
        needles = [str(n) for n in needles]
        hay = answer.casefold() if self.params.ignore_case else answer
        missing = [
            n for n in needles if (n.casefold() if self.params.ignore_case else n) not in hay
        ]
        value = 1 - len(missing) / len(needles) if needles else 1.0
        return self._graded(
            value,
            "answer is missing " + ", ".join(_show(m) for m in missing),
            "answer contains the expected text",
        )


class RegexParams(_Params):
    pattern: str | None = None
    ignore_case: bool = False
    fullmatch: bool = False


class Regex(Scorer):
    """Matches `pattern` (or, without one, the item's `expected` as a pattern)."""

    type = "regex"
    Params = RegexParams

    def __init__(self, params, base_dir):
        super().__init__(params, base_dir)
        if params.pattern is not None:
            self._compiled = _compile(params.pattern, params.ignore_case)

    @property
    def needs_expected(self):
        return self.params.pattern is None

    def check_item(self, expected):
        if self.params.pattern is None:
            if expected is None:
                return "required by scorer 'regex' when it has no 'pattern'"
            try:
                re.compile(str(expected))
            except re.error as exc:
                return f"not a valid regular expression: {exc}"
        return None

    def score(self, task, answer, ctx):
        pattern = self.params.pattern if self.params.pattern is not None else str(task.expected)
        rx = (
            self._compiled
            if self.params.pattern is not None
            else _compile(pattern, self.params.ignore_case)
        )
        got = answer.strip()
        m = rx.fullmatch(got) if self.params.fullmatch else rx.search(got)
        if m:
            return Score(1.0, True, f"matches /{pattern}/")
        return Score(0.0, False, f"answer {_show(got)} does not match /{pattern}/")


def _compile(pattern: str, ignore_case: bool) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE if ignore_case else 0)


# ---------------------------------------------------------------------- numbers, choices
_NUMBER = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")


def extract_number(text: str) -> float | None:
    """The first number in `text` (thousands separators and a unicode minus allowed)."""
    for m in _NUMBER.finditer(text):
        token = m.group(0)
        if not any(ch.isdigit() for ch in token):
            continue
        try:
            return float(token.replace(",", "").replace("−", "-"))
        except ValueError:
            continue
    return None


class NumberParams(_Params):
    tolerance: float = 0.0
    relative: float = 0.0


class Number(Scorer):
    """Passes when |answer - expected| <= max(tolerance, relative * |expected|)."""

    type = "number"
    Params = NumberParams

    def check_item(self, expected):
        if expected is None:
            return "required by scorer 'number'"
        if isinstance(expected, bool) or extract_number(str(expected)) is None:
            return f"scorer 'number' needs a number, got {expected!r}"
        return None

    def score(self, task, answer, ctx):
        exp = extract_number(str(task.expected))
        got = extract_number(answer)
        allowed = max(self.params.tolerance, self.params.relative * abs(exp))
        tol = f" (±{allowed:g})" if allowed else ""
        if got is None:
            return Score(
                0.0,
                False,
                f"expected the number {exp:g}{tol}; no number in {_show(answer.strip())}",
            )
        if math.isclose(got, exp, abs_tol=allowed + 1e-12, rel_tol=0.0):
            return Score(1.0, True, f"{got:g} is within tolerance of {exp:g}")
        return Score(0.0, False, f"expected {exp:g}{tol}, got {got:g} (off by {got - exp:+g})")


class ChoiceParams(_Params):
    choices: list[str | int | float] | None = None
    ignore_case: bool = True


class Choice(Scorer):
    """One of a fixed set of options; the answer may be the option itself or a
    sentence naming exactly one option. Per-item `metadata.choices` overrides."""

    type = "choice"
    Params = ChoiceParams

    def _choices(self, task) -> list[str]:
        item_choices = task.metadata.get("choices") if task.metadata else None
        return [str(c) for c in (item_choices or self.params.choices or [])]

    def check_item(self, expected):
        if expected is None:
            return "required by scorer 'choice'"
        if self.params.choices is not None:
            options = {self._fold(str(c)) for c in self.params.choices}
            if self._fold(str(expected)) not in options:
                return f"{expected!r} is not one of the scorer's choices {self.params.choices}"
        return None

    def _fold(self, s: str) -> str:
        return s.strip().casefold() if self.params.ignore_case else s.strip()

    def score(self, task, answer, ctx):
        choices = self._choices(task) or [str(task.expected)]
        got = self._fold(answer).rstrip(".")
        picked = [c for c in choices if self._fold(c) == got]
        if not picked:
            picked = [
                c
                for c in choices
                if re.search(r"(?<!\w)" + re.escape(self._fold(c)) + r"(?!\w)", self._fold(answer))
            ]
        expected = str(task.expected)
        if len(picked) == 1:
            if self._fold(picked[0]) == self._fold(expected):
                return Score(1.0, True, f"chose {expected!r}")
            return Score(0.0, False, f"chose {picked[0]!r}, expected {expected!r}")
        if not picked:
            return Score(
                0.0,
                False,
                f"answer {_show(answer.strip())} names none of {choices}; expected {expected!r}",
            )
        return Score(
            0.0, False, f"answer names several options {picked}; expected only {expected!r}"
        )


# ---------------------------------------------------------------------- json
class JsonParams(_Params):
    pass


MAX_JSON_DEPTH = 100  # nesting a reply may use; deeper is refused, never recursed into
MAX_JSON_STARTS = 200  # bracket positions tried when the JSON is embedded in prose
NO_JSON = "no JSON value found"


def json_depth(text: str) -> int:
    """The deepest bracket nesting in `text`, outside JSON strings (linear, no
    recursion): checked before decoding, because Python's decoder recurses once per
    level and a reply of 100,000 `[` would exhaust the stack."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def parse_json_answer(text: str) -> Any:
    """Parse JSON from a model answer: bare, fenced in ``` blocks, or embedded in prose.
    Raises `ValueError` (never anything else) when there is none, or when it is nested
    deeper than `MAX_JSON_DEPTH`."""
    text = text.strip()
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"the JSON is nested {depth} levels deep (at most {MAX_JSON_DEPTH})")
    fenced = re.search(r"```(?:json)?\s*\n(.*?)```", text, re.DOTALL)
    candidates = [text] + ([fenced.group(1)] if fenced else [])
    try:
        for cand in candidates:
            try:
                return json.loads(cand)
            except (json.JSONDecodeError, ValueError):
                pass
        decoder = json.JSONDecoder()
        starts = (i for i, ch in enumerate(text) if ch in "{[")
        for _, i in zip(range(MAX_JSON_STARTS), starts):
            try:
                return decoder.raw_decode(text, i)[0]
            except json.JSONDecodeError:
                continue
    except RecursionError:  # a small stack (a thread's) can still be too small
        raise ValueError("the JSON is nested too deeply to read") from None
    raise ValueError(NO_JSON)


def _subset(expected: Any, got: Any, path: str, problems: list[str]) -> tuple[int, int]:
    """Count (matched, total) leaves of `expected` found in `got`."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            problems.append(f"{path}: expected an object, got {_show(got, 60)}")
            return 0, _leaves(expected)
        m = t = 0
        for k, v in expected.items():
            if k not in got:
                problems.append(f"{path}.{k}: missing")
                t += _leaves(v)
                continue
            dm, dt = _subset(v, got[k], f"{path}.{k}", problems)
            m, t = m + dm, t + dt
        return m, t
    if isinstance(expected, list):
        if not isinstance(got, list) or len(got) != len(expected):
            problems.append(f"{path}: expected a list of {len(expected)}, got {_show(got, 60)}")
            return 0, max(1, _leaves(expected))
        m = t = 0
        for i, (e, g) in enumerate(zip(expected, got)):
            dm, dt = _subset(e, g, f"{path}[{i}]", problems)
            m, t = m + dm, t + dt
        return m, t
    if (
        expected == got
        and type(expected) is type(got)
        or (
            isinstance(expected, (int, float))
            and isinstance(got, (int, float))
            and not isinstance(got, bool)
            and not isinstance(expected, bool)
            and expected == got
        )
    ):
        return 1, 1
    problems.append(f"{path}: expected {_show(expected, 60)}, got {_show(got, 60)}")
    return 0, 1


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


class Json(Scorer):
    """Subset match: every field of `expected` must appear in the answer's JSON with
    the same value (extra fields are fine). The value is the fraction of matching
    leaves; pass needs `threshold` (default all)."""

    type = "json"
    Params = JsonParams

    def check_item(self, expected):
        if expected is None:
            return "required by scorer 'json'"
        if isinstance(expected, str):
            try:
                json.loads(expected)
            except json.JSONDecodeError as exc:
                return f"scorer 'json' needs a JSON value: {exc.msg}"
        return None

    def score(self, task, answer, ctx):
        expected = task.expected
        if isinstance(expected, str):
            expected = json.loads(expected)
        try:
            got = parse_json_answer(answer)
        except ValueError:
            return Score(0.0, False, f"answer is not JSON: {_show(answer.strip())}")
        problems: list[str] = []
        matched, total = _subset(expected, got, "$", problems)
        value = matched / total if total else 1.0
        return self._graded(
            value,
            "; ".join(problems[:8]) + (" …" if len(problems) > 8 else ""),
            "JSON matches the expected fields",
        )


# ---------------------------------------------------------------------- python
class PythonParams(_Params):
    function: str


class Python(Scorer):
    """Calls `module:function(answer, expected, task)`; the module is imported with
    the suite's directory on `sys.path`, only while it is imported (import sibling
    modules at the top of the file, not inside the function). It may return a bool,
    a number in [0, 1], a `Score`, or a mapping with `value`/`score`, `passed` and
    `feedback`."""

    type = "python"
    needs_expected = False
    Params = PythonParams

    def __init__(self, params, base_dir):
        super().__init__(params, base_dir)
        self._fn, self._source_hash = _import_function(params.function, base_dir)

    @property
    def spec(self):
        return {**super().spec, "source": self._source_hash}

    def score(self, task, answer, ctx):
        try:
            result = self._fn(answer, task.expected, task)
        except Exception as exc:  # the user's scorer failed: not the agent's fault
            raise ScorerError(
                f"scorer {self.params.function} raised {type(exc).__name__}: {exc}"
            ) from exc
        return self._coerce(result)

    def _coerce(self, result: Any) -> Score:
        if isinstance(result, Score):
            return Score(
                min(1.0, max(0.0, float(result.value))), bool(result.passed), result.feedback
            )
        if isinstance(result, bool):
            return Score(
                float(result),
                result,
                "passed" if result else f"{self.params.function} returned False",
            )
        if isinstance(result, (int, float)):
            return self._graded(
                float(result),
                f"{self.params.function} scored {float(result):.3g}",
                f"{self.params.function} scored {float(result):.3g}",
            )
        if isinstance(result, dict):
            value = result.get("value", result.get("score"))
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ScorerError(
                    f"scorer {self.params.function} returned a mapping without a numeric 'value'"
                )
            value = min(1.0, max(0.0, float(value)))
            passed = bool(result.get("passed", value >= self.params.threshold))
            return Score(value, passed, str(result.get("feedback", "")))
        raise ScorerError(
            f"scorer {self.params.function} returned {type(result).__name__}; "
            "expected bool, number, Score or mapping"
        )


def _import_function(ref: str, base_dir: Path) -> tuple[Callable, str]:
    """Resolve `module:function`. A module file next to the suite is loaded from
    that file under a private name, fresh each time: a cached module could be
    another suite's file of the same name, or this file before it was edited, and
    the user's file must never replace a module the process already uses. Other
    names are imported normally (installed packages). While the file runs, the
    suite's directory is on `sys.path`, so it can import its siblings at import
    time; afterwards `sys.path` is exactly what it was (also when the import fails)."""
    if ":" not in ref:
        raise ValueError(f"'{ref}' is not of the form module:function")
    module_name, _, attr = ref.partition(":")
    local = base_dir.joinpath(*module_name.split("."))
    path = next((p for p in (local.with_suffix(".py"), local / "__init__.py") if p.is_file()), None)
    try:
        if path is not None:
            source = path.read_bytes()
            digest = hashlib.sha256(source).hexdigest()[:16]
            private = f"_skillopt_scorer_{digest}_{module_name.replace('.', '_')}"
            spec = importlib.util.spec_from_file_location(private, path)
            module = importlib.util.module_from_spec(spec)
            saved = list(sys.path)
            try:  # the suite's directory is on sys.path only while the module runs
                if str(base_dir) not in sys.path:  # so the scorer can import its siblings
                    sys.path.append(str(base_dir))
                spec.loader.exec_module(module)
            finally:
                sys.path[:] = saved
        else:
            module = importlib.import_module(module_name)
            file = getattr(module, "__file__", None)
            digest = hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16] if file else "builtin"
    except Exception as exc:
        raise ValueError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"module {module_name!r} has no function {attr!r}")
    return fn, digest


# ---------------------------------------------------------------------- command
class CommandParams(_Params):
    run: str
    timeout: float = 60.0
    env: list[str] = []  # names of variables passed through besides the basic ones


class Command(Scorer):
    """Runs a shell verifier. It gets the answer on stdin and in
    `$SKILLOPT_ANSWER_FILE`, the expected value in `$SKILLOPT_EXPECTED`, runs in
    the task's finished workspace when there is one, and scores by exit code (0 =
    pass) or by a JSON object on its last stdout line: {"score": x, "feedback": …}.

    The verifier runs like an agent (`skillopt.harness.process`): a scrubbed
    environment (the basics in `BASE_ENV`, the SKILLOPT_* variables above,
    `SKILLOPT_TASK_ID`, `SKILLOPT_SUITE_DIR`, and the names listed in `env` —
    nothing else of skillopt's, so no provider key unless listed), its own process
    group, and its own PID namespace where the platform allows. Its output becomes
    feedback, so it is passed through `skillopt.text.safe`: known secrets are
    blanked.

    A verifier that cannot start (exit 126/127) is unscored; one that times out
    fails the task (the agent's output is what made it hang)."""

    type = "command"
    version = 2  # 2: the verifier gets a scrubbed environment, not skillopt's own
    needs_expected = False
    Params = CommandParams

    def score(self, task, answer, ctx):
        from skillopt.harness import process
        from skillopt.text import safe

        with tempfile.TemporaryDirectory(prefix="skillopt-verify-") as tmp:
            answer_file = Path(tmp) / "answer.txt"
            answer_file.write_text(answer, encoding="utf-8")
            io_dir = Path(tmp) / "io"
            io_dir.mkdir()
            cwd = ctx.workspace if ctx.workspace is not None else Path(tmp)
            expected = (
                ""
                if task.expected is None
                else (
                    task.expected if isinstance(task.expected, str) else json.dumps(task.expected)
                )
            )
            env = process.scrubbed_env(
                [*process.BASE_ENV, *self.params.env],
                extra={
                    "SKILLOPT_ANSWER_FILE": str(answer_file),
                    "SKILLOPT_EXPECTED": expected,
                    "SKILLOPT_TASK_ID": task.id,
                    "SKILLOPT_SUITE_DIR": str(self.base_dir),
                },
            )
            try:
                result = process.run_process(
                    ["/bin/sh", "-c", self.params.run],
                    cwd=cwd,
                    env=env,
                    stdin_text=answer,
                    timeout=self.params.timeout,
                    io_dir=io_dir,
                )
            except OSError as exc:
                raise ScorerError(f"verifier could not start: {exc}") from exc
        if result.timed_out:  # its process group was killed
            return Score(0.0, False, f"verifier timed out after {self.params.timeout:g}s")
        stdout, stderr = safe(result.stdout), safe(result.stderr)
        returncode = result.returncode
        tail = _tail(stdout + stderr)
        if returncode in (126, 127):
            raise ScorerError(f"verifier could not run (exit {returncode}): {tail}")
        last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
        if last.startswith("{"):
            try:
                data = json.loads(last)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("score"), (int, float)):
                value = min(1.0, max(0.0, float(data["score"])))
                passed = bool(data.get("passed", value >= self.params.threshold))
                return Score(value, passed, safe(str(data.get("feedback", tail))))
        if returncode == 0:
            return Score(1.0, True, tail or "verifier passed")
        return Score(
            0.0,
            False,
            f"verifier exited {returncode}: {tail}" if tail else f"verifier exited {returncode}",
        )


def _tail(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


# ---------------------------------------------------------------------- judge
class JudgeParams(_Params):
    rubric: str
    model: str | None = None
    threshold: float = 0.5


class Judge(Scorer):
    """An LLM grades the answer against a rubric (and the expected answer when the
    item has one). The judge model comes from the spec's `model`, the suite's
    `judge:` or the `--judge` setting; its reply must hold a JSON object with a
    `score` in [0, 1] and a `feedback` string."""

    type = "judge"
    needs_expected = False
    Params = JudgeParams

    def score(self, task, answer, ctx):
        if ctx.judge is None:
            raise ScorerError("judge scorer has no judge model")
        from skillopt.prompts import render_prompt

        prompt = render_prompt(
            "judge",
            rubric=self.params.rubric,
            task=task.prompt,
            expected="(none given)" if task.expected is None else str(task.expected),
            answer=answer,
        )
        try:
            reply = ctx.judge.complete([{"role": "user", "content": prompt}])
        except ModelError as exc:
            raise ScorerError(f"judge model failed: {exc}") from exc
        try:
            data = parse_json_answer(reply.text)
            value = float(data["score"])
        except (ValueError, KeyError, TypeError):
            raise ScorerError(f"judge reply has no JSON score: {_show(reply.text)}") from None
        value = min(1.0, max(0.0, value))
        feedback = str(data.get("feedback", "")).strip() or f"judge scored {value:.2f}"
        return Score(value, value >= self.params.threshold, feedback)


SCORERS: dict[str, type[Scorer]] = {
    cls.type: cls
    for cls in (Exact, Normalized, Contains, Regex, Number, Choice, Json, Python, Command, Judge)
}


def scorer_class(kind: str) -> type[Scorer]:
    """The scorer class registered as `kind` (built in or a plugin's). Raises
    `ValueError` for an unknown name, `PluginError` for one that cannot be loaded."""
    from skillopt.plugins import PluginError, registry

    reg = registry()
    entry = reg.find("scorer", kind)
    if entry is None:
        raise ValueError(
            f"unknown scorer {kind!r}; choose one of: {', '.join(reg.names('scorer'))}"
        )
    cls = entry.load()
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} is {cls!r}, not a subclass of skillopt.Scorer"
        )
    if cls.type != kind:
        raise PluginError(
            f"the scorer {kind!r} from {entry.origin} declares type {cls.type!r}; they must match"
        )
    return cls


def build_scorer(spec: Any, base_dir: Path) -> Scorer:
    """Build a scorer from a spec (`"exact"` or `{type: regex, pattern: …}`).
    Raises `ValueError` with a one-line reason; the loader adds file and item."""
    if isinstance(spec, str):
        kind, params = spec, {}
    elif isinstance(spec, dict):
        params = dict(spec)
        kind = params.pop("type", None)
        if not isinstance(kind, str):
            raise ValueError("scorer mapping needs a 'type'")
    else:
        raise ValueError(f"scorer must be a name or a mapping, got {type(spec).__name__}")
    cls = scorer_class(kind)
    try:
        parsed = cls.Params(**params)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or kind
        raise ValueError(f"scorer {kind!r} parameter {loc!r}: {err['msg']}") from None
    try:
        return cls(parsed, base_dir)
    except re.error as exc:
        raise ValueError(f"scorer {kind!r}: invalid pattern: {exc}") from None


__all__ = [
    "Score",
    "ScoreContext",
    "Scorer",
    "SCORERS",
    "build_scorer",
    "extract_number",
    "parse_json_answer",
]
