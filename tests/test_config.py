"""Settings resolution: defaults < project file < suite defaults < env < flags."""

from __future__ import annotations

import pytest

from skillopt.config import resolve_settings
from skillopt.errors import InputError


def test_layers_in_order(isolated):
    project = isolated / "skillopt.yaml"
    project.write_text(
        "target: from-file\nconcurrency: 3\njudge: judge-file\nstore: data/store.sqlite\n"
    )
    s = resolve_settings({}, project_file=project, env={})
    assert (s.target, s.concurrency, s.judge) == ("from-file", 3, "judge-file")
    assert s.store == str(isolated / "data" / "store.sqlite")  # relative to the file
    s = resolve_settings({}, project_file=project, suite_defaults={"target": "from-suite"}, env={})
    assert (s.target, s.concurrency) == ("from-suite", 3)
    s = resolve_settings(
        {},
        project_file=project,
        suite_defaults={"target": "from-suite"},
        env={"SKILLOPT_TARGET": "from-env", "SKILLOPT_CONCURRENCY": "5"},
    )
    assert (s.target, s.concurrency) == ("from-env", 5)
    s = resolve_settings(
        {"target": "from-flag", "concurrency": None},
        project_file=project,
        env={"SKILLOPT_TARGET": "from-env"},
    )
    assert (s.target, s.concurrency) == ("from-flag", 3)


def test_defaults_without_any_file(isolated):
    s = resolve_settings({}, env={})
    assert s.target is None and s.concurrency == 8 and s.harness == "chat"
    assert s.store == "runs/rollouts.sqlite"


def test_project_file_found_in_parent(isolated, monkeypatch):
    (isolated / "skillopt.yaml").write_text("target: parent\n")
    sub = isolated / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert resolve_settings({}, env={}).target == "parent"


def test_model_settings_merge_per_model(isolated):
    project = isolated / "skillopt.yaml"
    project.write_text("models:\n  openai/x: {api_base: 'http://h/v1', temperature: 0.1}\n")
    s = resolve_settings(
        {},
        project_file=project,
        suite_defaults={"models": {"openai/x": {"temperature": 0.5}}},
        env={},
    )
    ms = s.model_settings("openai/x")
    assert (ms.api_base, ms.temperature) == ("http://h/v1", 0.5)
    assert s.model_settings("other").api_base is None


@pytest.mark.parametrize(
    "text, needle",
    [
        ("targt: x\n", "field 'targt': unknown setting"),
        ("concurrency: zero\n", "field 'concurrency'"),
        ("models:\n  m: {api_key: sk-secret}\n", "field 'models.m.api_key': unknown setting"),
        ("- a list\n", "must be a mapping"),
        ("target: [unclosed\n", "invalid YAML"),
    ],
)
def test_bad_project_file_names_file_and_key(isolated, text, needle):
    project = isolated / "skillopt.yaml"
    project.write_text(text)
    with pytest.raises(InputError) as info:
        resolve_settings({}, project_file=project, env={})
    assert needle in str(info.value) and "skillopt.yaml" in str(info.value)


def test_an_unclosed_bracket_in_the_project_file_is_reported_on_its_line(isolated):
    project = isolated / "skillopt.yaml"
    project.write_text("target: [unclosed\nepochs: 2\n")
    with pytest.raises(InputError) as info:
        resolve_settings({}, project_file=project, env={})
    assert info.value.line == 1 and "skillopt.yaml:1: invalid YAML" in str(info.value)


def test_bad_suite_defaults_and_env_are_named(isolated):
    with pytest.raises(InputError, match="tasks.yaml: defaults: field 'epochz'"):
        resolve_settings({}, suite_defaults={"epochz": 3}, suite_path="tasks.yaml", env={})
    with pytest.raises(InputError, match="concurrency"):
        resolve_settings({}, env={"SKILLOPT_CONCURRENCY": "many"})
