"""The scripted model: mapping, function and queue answers, call history, threads."""

from __future__ import annotations

import threading

import pytest

from skillopt.errors import InputError, ModelError
from skillopt.models import ScriptedModel, register_model, resolve_model, unregister_model
from skillopt.models.base import Completion, Usage


def test_mapping_answers_by_last_user_message_and_records_calls():
    m = ScriptedModel({"2+2": "4", "capital of France": "Paris"})
    assert (
        m.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "2+2"}]).text
        == "4"
    )
    assert m.complete("capital of France").text == "Paris"
    assert m.call_count == 2
    assert m.calls[0].messages[0]["content"] == "s"


def test_mapping_without_answer_raises_unless_default():
    with pytest.raises(ModelError, match="no answer"):
        ScriptedModel({"a": "b"}).complete("zzz")
    assert ScriptedModel({"a": "b"}, default="dunno").complete("zzz").text == "dunno"


def test_mapping_queue_and_exception_values():
    m = ScriptedModel({"q": [ModelError("flaky", kind="rate_limit"), "second", "last"]})
    with pytest.raises(ModelError, match="flaky"):
        m.complete("q")
    assert [m.complete("q").text for _ in range(3)] == ["second", "last", "last"]


def test_function_answers_and_may_return_completion():
    m = ScriptedModel(lambda msgs: msgs[-1]["content"][::-1])
    assert m.complete("abc").text == "cba"
    rich = ScriptedModel(lambda msgs: Completion("x", Usage(7, 1), cost=0.5))
    reply = rich.complete("anything")
    assert (reply.text, reply.usage.total, reply.cost) == ("x", 8, 0.5)


def test_queue_runs_out():
    m = ScriptedModel(["one", "two"])
    assert [m.complete("a").text, m.complete("b").text] == ["one", "two"]
    with pytest.raises(ModelError, match="ran out"):
        m.complete("c")


def test_threads_see_each_queued_answer_once():
    m = ScriptedModel([str(i) for i in range(200)])
    got: list[str] = []
    lock = threading.Lock()

    def worker():
        for _ in range(50):
            text = m.complete("x").text
            with lock:
                got.append(text)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got, key=int) == [str(i) for i in range(200)]
    assert m.call_count == 200


def test_resolve_scripted_names(monkeypatch):
    assert resolve_model("scripted/echo").complete("hey").text == "hey"
    m = resolve_model("scripted/string:capwords")  # any importable (messages) -> str works
    assert m.name == "scripted/string:capwords"
    with pytest.raises(InputError, match="scripted/echo"):
        resolve_model("scripted/nonsense")
    with pytest.raises(InputError, match="cannot load"):
        resolve_model("scripted/no_such_module_xyz:fn")
    fixed = ScriptedModel(default="registered")
    register_model("test/fixed", fixed)
    try:
        assert resolve_model("test/fixed") is fixed
    finally:
        unregister_model("test/fixed")
