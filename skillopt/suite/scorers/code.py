"""Scorers that run the user's code: `python` (a function next to the suite) and
`command` (a shell verifier in the task's finished workspace).

Their failures to judge are `ScorerError` (the user's function raised, the verifier
could not start): the rollout is unscored, not failed. A verifier that times out
fails the task, since the agent's output is what made it hang.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillopt.errors import ScorerError
from skillopt.suite.scorers.base import Score, ScoreContext, Scorer, ScorerParams
from skillopt.suite.task import Task


class PythonParams(ScorerParams):
    function: str


class Python(Scorer[PythonParams]):
    """Calls `module:function(answer, expected, task)`; the module is imported with
    the suite's directory on `sys.path`, only while it is imported (import sibling
    modules at the top of the file, not inside the function). It may return a bool,
    a number in [0, 1], a `Score`, or a mapping with `value`/`score`, `passed` and
    `feedback`."""

    name = "python"
    needs_expected = False
    Params = PythonParams
    runs_code = True

    def __init__(self, params: PythonParams, base_dir: Path):
        super().__init__(params, base_dir)
        self._fn, self._source_hash = _import_function(params.function, base_dir)

    @property
    def spec(self) -> dict[str, Any]:
        # the digest of the module imported, not read again (`spec_of` reads the file)
        return {
            "type": self.name,
            "v": self.version,
            **self.params.model_dump(),
            "source": self._source_hash,
        }

    @classmethod
    def spec_of(cls, params: ScorerParams, base_dir: Path) -> dict[str, Any]:
        assert isinstance(params, PythonParams)  # the registry validated it into these
        return {**super().spec_of(params, base_dir), "source": source_digest(params, base_dir)}

    @classmethod
    def code_of(cls, params: ScorerParams) -> str:
        return f"function: {params.function}" if isinstance(params, PythonParams) else ""

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
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


def _local_module(module_name: str, base_dir: Path) -> Path | None:
    """The file of `module_name` beside the suite (a module or a package), if any."""
    local = base_dir.joinpath(*module_name.split("."))
    return next((p for p in (local.with_suffix(".py"), local / "__init__.py") if p.is_file()), None)


def source_digest(params: PythonParams, base_dir: Path) -> str:
    """The digest `Python.spec` holds for `params`, found without importing or running
    anything: the module's file beside the suite, else the installed module's file as
    the import system would find it (`builtin` for a module without one). A module
    that cannot be found so gets a digest no recording holds."""
    module_name = params.function.partition(":")[0]
    path = _local_module(module_name, base_dir)
    if path is None:
        path = _installed_file(module_name)
    if path is None:
        return "builtin" if module_name in sys.builtin_module_names else "not-found"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return "not-found"


def _installed_file(module_name: str) -> Path | None:
    """The file an import of `module_name` would run, found by the path finder part by
    part (`importlib.util.find_spec` would import the parent packages)."""
    import importlib.machinery

    loaded = sys.modules.get(module_name)
    if loaded is not None:
        file = vars(loaded).get("__file__")
        return Path(file) if isinstance(file, str) else None
    search: list[str] | None = None
    found = None
    for part in module_name.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, search)
        if found is None:
            return None
        locations = found.submodule_search_locations
        search = list(locations) if locations is not None else None
    origin = found.origin if found is not None else None
    return Path(origin) if origin and found is not None and found.has_location else None


def _import_function(ref: str, base_dir: Path) -> tuple[Callable[..., Any], str]:
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
    path = _local_module(module_name, base_dir)
    try:
        if path is not None:
            source = path.read_bytes()
            digest = hashlib.sha256(source).hexdigest()[:16]
            private = f"_skillopt_scorer_{digest}_{module_name.replace('.', '_')}"
            spec = importlib.util.spec_from_file_location(private, path)
            if spec is None or spec.loader is None:  # a .py file always has both
                raise ImportError(f"no loader for {path}")
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
            file = vars(module).get("__file__")  # a built-in module has none
            digest = hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16] if file else "builtin"
    except Exception as exc:
        raise ValueError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    fn = vars(module).get(attr)
    if not callable(fn):
        raise ValueError(f"module {module_name!r} has no function {attr!r}")
    return fn, digest


# ---------------------------------------------------------------------- command
OUTPUT_TAIL = 600  # characters of the end of a verifier's output kept as feedback


class CommandParams(ScorerParams):
    run: str
    timeout: float = 60.0
    env: list[str] = []  # names of variables passed through besides the basic ones


class Command(Scorer[CommandParams]):
    """Runs a shell verifier. It gets the answer on stdin and in
    `$SKILLOPT_ANSWER_FILE`, the expected value in `$SKILLOPT_EXPECTED`, runs in
    the task's finished workspace when there is one, and scores by exit code (0 =
    pass) or by a JSON object on its last stdout line: {"score": x, "feedback": …}.

    The verifier runs like an agent (`skillopt.harness.process`): a scrubbed
    environment (the basics in `BASE_ENV`, the SKILLOPT_* variables above,
    `SKILLOPT_TASK_ID`, `SKILLOPT_SUITE_DIR`, and the names listed in `env` —
    nothing else of skillopt's, so no provider key unless listed), its own process
    group, and its own PID namespace where the platform allows. Its output becomes
    feedback, so it is passed through `skillopt._util.text.safe`: known secrets are
    blanked.

    A verifier that cannot start (exit 126/127) is unscored; one that times out
    fails the task (the agent's output is what made it hang). Unscored too: one that
    fails where the suite's directory does not exist (a Ray worker without the
    suite's files), since what it missed may be a file beside the suite."""

    name = "command"
    version = 2  # 2: the verifier gets a scrubbed environment, not skillopt's own
    needs_expected = False
    Params = CommandParams
    runs_code = True

    @classmethod
    def code_of(cls, params: ScorerParams) -> str:
        return f"run: {params.run}" if isinstance(params, CommandParams) else ""

    def score(self, task: Task, answer: str, ctx: ScoreContext) -> Score:
        from skillopt._util.text import safe, tail
        from skillopt.harness import process

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
        stdout, stderr = safe(result.stdout) or "", safe(result.stderr) or ""
        returncode = result.returncode
        output = tail(stdout + stderr, OUTPUT_TAIL)
        if returncode in (126, 127):
            raise ScorerError(f"verifier could not run (exit {returncode}): {output}")
        if returncode != 0 and not self.base_dir.is_dir():
            # it may have failed for want of a file beside the suite: on a Ray worker
            # the suite's directory is where the driver has it, or nowhere
            raise ScorerError(
                f"verifier exited {returncode} where the suite's directory {self.base_dir} "
                "(its $SKILLOPT_SUITE_DIR) does not exist: on a cluster, files the "
                f"verifier reads beside the suite must be on every worker at that path: {output}"
            )
        last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
        if last.startswith("{"):
            try:
                data = json.loads(last)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("score"), (int, float)):
                value = min(1.0, max(0.0, float(data["score"])))
                passed = bool(data.get("passed", value >= self.params.threshold))
                return Score(value, passed, safe(str(data.get("feedback", output))) or "")
        if returncode == 0:
            return Score(1.0, True, output or "verifier passed")
        return Score(
            0.0,
            False,
            f"verifier exited {returncode}: {output}"
            if output
            else f"verifier exited {returncode}",
        )
