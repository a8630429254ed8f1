"""llama.cpp, loaded once per process: the only module that imports `llama_cpp`.

Invariants:
- One loaded model per (context size, threads), kept for the life of the process
  and closed before the interpreter tears llama_cpp down; calls are serialised by
  the caller (`local.LocalModel`).
- An answer depends on its prompt alone, never on the calls before it: every
  prompt is evaluated the same way, the skill part (the head) in one llama.cpp
  batch, the task part in the next. llama.cpp's numerics depend on batch shapes,
  so reusing whatever prefix the last call left in the KV cache (llama-cpp-python's
  own prefix matching) made answers depend on call order. Here the KV cache is
  reused only when it holds exactly this prompt's head, evaluated the canonical
  way: the result is byte-identical to a fresh model, and the speed-up of not
  recomputing the skill is kept.
- A llama.cpp built with AMX kernels (a native build on a CPU that advertises
  AMX) loads the weights without its extra buffer types: the AMX matrix multiply
  killed the process (SIGSEGV) on a virtual machine whose CPU lists AMX, and the
  270M model needs no accelerator. `runtime()` names the build's features, so
  the choice is part of every fingerprint.
- Answers are the same on every x86-64 CPU only from a build for the AVX2
  baseline (`GGML_NATIVE=OFF`): kernels for the CPU's own AVX-512 or AMX sum in
  another order. Loading such a build says so once, with the reinstall that fixes it.
- llama.cpp's threads never outnumber the cores the process may use (its CPU
  affinity, its cgroup's quota, `OMP_NUM_THREADS` where set: Ray sets it to a
  worker's CPUs), and its OpenMP threads sleep instead of spinning while they
  wait (`OMP_WAIT_POLICY=passive` while llama.cpp loads, unless the user set
  it): spinning threads on a busy machine keep the one doing the work off the CPU,
  and a call took 10x longer at load 10 on two cores
  (`benchmarks/local_threads_benchmark.py`). The thread count is not in the
  fingerprint: it does not change an answer.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import inspect
import logging
import math
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from skillopt.errors import InputError
from skillopt.models.local_weights import INSTALL_HINT, model_path

if TYPE_CHECKING:
    from llama_cpp import Llama

STOP = ["\n", "<end_of_turn>", "<eos>"]
_STOP_BYTES = [s.encode("utf-8") for s in STOP]

MAX_THREADS = 4  # the 270M model gains little from more
# set while llama.cpp (and with it OpenMP, which reads it once) loads
_OPENMP = {"OMP_WAIT_POLICY": "passive"}
_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
# kernels for one CPU's own instructions, as llama.cpp's system info names them
_NATIVE_KERNELS = re.compile(r"\b(AVX512\w*|AMX\w*) = 1")

log = logging.getLogger("skillopt")
_load_lock = threading.Lock()
_import_lock = threading.Lock()
_loaded: dict[tuple[int, int], _Runner] = {}
_warned: set[str] = set()


def _llama_cpp() -> ModuleType:
    """`llama_cpp`, imported with OpenMP's waiting threads asleep (`_OPENMP`, unless
    the environment sets it already). The environment is restored at once, so the
    subprocesses skillopt starts (agents, verifiers) do not inherit it."""
    with _import_lock:
        saved = {name: os.environ.get(name) for name in _OPENMP}
        for name, value in _OPENMP.items():
            os.environ.setdefault(name, value)
        try:
            import llama_cpp
        finally:
            for name, old in saved.items():
                if old is None:
                    os.environ.pop(name, None)
        return llama_cpp


def llama_version() -> str | None:
    """llama-cpp-python's version; None when it is not installed."""
    try:
        llama_cpp = _llama_cpp()
    except ImportError:
        return None
    return str(llama_cpp.__version__)


def _system_info() -> str:
    """llama.cpp's own line on its build: the CPU features its kernels use."""
    return str(_llama_cpp().llama_print_system_info().decode("utf-8", "replace"))


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, within its cgroup's CPU
    quota (a container limited to 2 CPUs on a 64-core host has 2)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        n = os.cpu_count() or 1
    try:
        quota, period = _CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            n = min(n, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):  # no cgroup v2 CPU controller here
        pass
    return max(1, n)


def default_threads() -> int:
    """llama.cpp's threads for one process: the cores it may use, at most
    `MAX_THREADS`, and no more than `OMP_NUM_THREADS` where that is set (Ray sets
    it to the CPUs it gives a worker). A process runs one call at a time
    (`local.LocalModel` serialises them), so its rollouts running at once do not
    divide the cores; processes sharing a machine (Ray workers) each get theirs."""
    n = min(MAX_THREADS, usable_cores())
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        n = min(n, int(omp))
    return n


def native_kernels(info: str) -> list[str]:
    """The CPU-specific kernel sets (AVX-512, AMX) a system info line names."""
    return sorted({m.group(1) for m in _NATIVE_KERNELS.finditer(info)})


def _say_if_native() -> None:
    """Once per process: a build with one CPU's own kernels answers differently from
    the portable build the README's figures and other machines use."""
    kernels = native_kernels(_system_info())
    if not kernels or "native" in _warned:
        return
    _warned.add("native")
    log.warning(
        "llama.cpp here is built for this CPU (%s): the embedded model's answers can "
        "differ from other machines' and from the README's figures; install the portable "
        'build: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-deps '
        "--no-cache-dir llama-cpp-python==%s",
        ", ".join(kernels),
        llama_version(),
    )


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
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
    return "AMX_INT8 = 1" in _system_info()


@contextlib.contextmanager
def _without_extra_buffers() -> Iterator[None]:
    """While loading: llama.cpp's model defaults with `use_extra_bufts` off (no AMX
    or repacked weight buffers), where the build has AMX and the binding has the
    field; otherwise as it is. Callers hold `_load_lock`."""
    import llama_cpp.llama_cpp as binding

    defaults = binding.llama_model_default_params
    fields = [field[0] for field in binding.llama_model_params._fields_]
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
        for loaded in _loaded.values():
            try:
                loaded.llm.close()
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

    def __init__(self, llm: Llama):
        llama_cpp = _llama_cpp()
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

    def distrust_cache(self) -> None:
        """Whatever the cache holds now is not to be trusted (a call failed midway):
        the next call evaluates its head again."""
        self.head = None

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
            llm.reset()  # type: ignore[no-untyped-call]  # llama-cpp-python leaves it unannotated
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


def runner_for(n_ctx: int, n_threads: int) -> _Runner:
    """The model loaded with this context size and thread count (loaded on first
    use, assembling the weights if needed); `InputError` without the `local` extra."""
    key = (n_ctx, n_threads)
    with _load_lock:
        if key not in _loaded:
            try:
                llama_class = _llama_cpp().Llama
            except ImportError:
                raise InputError(INSTALL_HINT, field="model") from None
            _say_if_native()
            path = model_path()
            # a full-size sliding-window cache: a smaller one recycles cells, and a
            # head's entries must stay in place for the next call to reuse them
            # (`swa_full` where this llama-cpp-python has it: its arguments vary by version)
            options: dict[str, Any] = dict(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_batch=512,
                seed=0,
                verbose=False,
            )
            if "swa_full" in inspect.signature(llama_class).parameters:
                options["swa_full"] = True
            with _quiet_stderr(), _without_extra_buffers():
                llm = llama_class(**options)
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
        version = _llama_cpp().__version__
    except ImportError:  # calls fail with the install hint; nothing is stored
        return "none"
    return hashlib.sha256(f"{version}\n{_system_info()}".encode()).hexdigest()[:12]
