"""The embedded offline model: Gemma 3 270M (Q4_K_M GGUF) run by llama-cpp-python.

Invariants:
- Without the `local` extra it raises an error saying exactly what to install
  (`local_weights.INSTALL_HINT`); llama.cpp is reached only through `local_llama`.
- It is a *base* model: prompted completion-style (`local_prompt`: the skill, then
  the task behind an answer cue), greedy by default, stopping at the end of the
  line.
- One model per process, calls serialised by a lock; an answer depends on its
  prompt alone (`local_llama`).
- A prompt longer than the context is a per-task `ModelError` (unscored), never a
  crash.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from skillopt.errors import InputError, ModelError
from skillopt.models.base import Completion, Prompt, Usage
from skillopt.models.local_llama import default_threads, llama_version, runner_for, runtime
from skillopt.models.local_prompt import (
    NAME,
    PROMPT_FORMAT,
    completion_parts,
    completion_prompt,
    describe,
)
from skillopt.models.local_weights import cache_dir, gguf_package

if TYPE_CHECKING:
    from skillopt.config.sections import ModelSettings

# bump when the way a prompt is evaluated changes what the model answers: it is in
# every fingerprint, so rollouts stored by an older evaluation are not served.
# v2: the skill part and the task part in two fixed batches (answers no longer
# depend on the previous call); v1 let llama-cpp-python reuse any cached prefix
EVALUATION = "v2"

MAX_TOKENS = 48  # an answer is one short line
TEMPERATURE = 0.0  # greedy

_call_lock = threading.Lock()


def status() -> dict[str, Any]:
    """What `skillopt models` shows: installed, cached, where."""
    out: dict[str, Any] = {"name": NAME, "llama_cpp": llama_version()}
    try:
        pkg = gguf_package()
        target = cache_dir() / str(pkg.MODEL_NAME)
        out["weights_package"] = True
        out["cache"] = str(target)
        out["cached"] = target.is_file()
    except InputError:
        out["weights_package"] = False
        out["cached"] = False
    out["installed"] = bool(out["llama_cpp"]) and out["weights_package"]
    return out


class LocalModel:
    """`local/gemma-3-270m`. `prefix_reuse=False` evaluates the skill part afresh
    on every call (the answers are the same; only for measuring what reuse saves)."""

    def __init__(
        self,
        *,
        max_tokens: int = MAX_TOKENS,
        temperature: float = TEMPERATURE,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        prefix_reuse: bool = True,
    ):
        self.name = NAME
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.prefix_reuse = prefix_reuse
        self._sha = gguf_package().EXPECTED_SHA256
        self.calls = 0

    def fingerprint(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weights": self._sha[:16],
            "format": PROMPT_FORMAT,
            "evaluation": EVALUATION,
            "runtime": runtime(),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def describe_target(self) -> str:
        """How this model reads a skill and a task (`Describes`, for the optimizer)."""
        return describe(temperature=self.temperature, max_tokens=self.max_tokens)

    def task_as_seen(self, task: str) -> str:
        """The task as this model reads it after the skill: behind the answer cue."""
        return completion_prompt(task)

    @property
    def context_window(self) -> int:
        """Tokens of prompt the model takes (its answer needs `max_tokens` of them too)."""
        return self.n_ctx - self.max_tokens

    def check(self) -> None:
        """Load now (assembling the weights if needed) so a problem shows before any
        task runs."""
        runner_for(self.n_ctx, self.n_threads)

    def complete(self, prompt: Prompt, **params: Any) -> Completion:
        runner = runner_for(self.n_ctx, self.n_threads)
        head, tail = completion_parts(prompt)
        start = time.perf_counter()
        with _call_lock:
            tokens, boundary = runner.split(head, head + tail)
            if len(tokens) + self.max_tokens > self.n_ctx:
                raise ModelError(
                    f"{self.name}: the prompt is {len(tokens)} tokens; with "
                    f"{self.max_tokens} to generate it exceeds the context of "
                    f"{self.n_ctx}",
                    kind="context_window",
                    retryable=False,
                )
            try:
                text, generated, finish = runner.answer(
                    tokens,
                    boundary,
                    max_tokens=self.max_tokens,
                    temperature=self.temperature,
                    reuse=self.prefix_reuse,
                )
            except Exception as exc:  # llama.cpp failures are per-task, not crashes
                runner.distrust_cache()
                raise ModelError(
                    f"{self.name}: {type(exc).__name__}: {exc}", kind="error", retryable=False
                ) from exc
            self.calls += 1
        return Completion(
            text=text.strip(),
            usage=Usage(len(tokens), generated),
            cost=0.0,
            latency_s=time.perf_counter() - start,
            model=self.name,
            finish_reason=finish,
        )


def build(name: str, settings: ModelSettings) -> LocalModel:
    """The registry's factory for `local/...` names: only the embedded model."""
    if name != NAME:
        raise InputError(f"unknown local model {name!r}; the embedded model is {NAME}")
    return LocalModel(
        temperature=TEMPERATURE if settings.temperature is None else settings.temperature,
        max_tokens=MAX_TOKENS if settings.max_tokens is None else settings.max_tokens,
    )
