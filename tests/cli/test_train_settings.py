"""The train settings are one list: `Settings` (skillopt.config) says what each is
and its default; the api's keywords (`TrainOptions`, and those of `evaluate`,
`validate`, `resume`), the CLI's options and the defaults their help names are
checked against it here, so they cannot drift apart."""

from __future__ import annotations

import inspect
import re

import pytest
import typer

from skillopt import api
from skillopt.cli.main import app
from skillopt.cli.train import SWITCHES, train_options
from skillopt.config import Settings

# settings only skillopt.yaml (or a suite's `defaults:`) sets, each for a reason:
FILE_ONLY = {
    "ray",  # the cluster's address and runtime_env: a section, not a flag
    "models",  # per-model endpoints and keys: a mapping, not a flag
    "max_edit_lines",  # the edit bounds: tuned per project, not per run
    "max_step_lines",
    "sections",  # plugin harnesses' own sections
}
# sections an api call may pass as a mapping; the CLI reads them from skillopt.yaml
SECTIONS = {"agent", "claude_code", "codex", "command"}
# keywords of the entry points that are not settings
NOT_SETTINGS = {
    "skill",
    "suite",
    "run",
    "split",
    "no_skill",
    "compare_no_skill",
    "min_score",
    "baseline",
    "max_regressions",
    "min_load_rate",
    "settings",
    "observers",
    "warn",
    "options",
}


def command(name: str):
    """The click command typer builds for `skillopt NAME`."""
    return typer.main.get_command(app).commands[name]


def test_train_options_are_the_settings_a_run_takes():
    assert set(api.TRAIN_OPTIONS) <= set(Settings.model_fields)
    assert set(Settings.model_fields) - set(api.TRAIN_OPTIONS) == FILE_ONLY


@pytest.mark.parametrize(
    "entry", [api.train, api.plan, api.evaluate, api.validate, api.resume, api.cluster_report]
)
def test_every_api_keyword_is_a_setting_or_named_here(entry):
    keywords = set(inspect.signature(entry).parameters)
    assert keywords - set(Settings.model_fields) <= NOT_SETTINGS, entry.__name__


def test_plan_takes_what_train_takes():
    train = set(inspect.signature(api.train).parameters) - {"observers", "warn"}
    assert set(inspect.signature(api.plan).parameters) == train


def test_every_train_setting_is_a_train_option():
    names = {p.name for p in command("train").params}
    switched = {key for key, _ in SWITCHES.values()}
    for key in set(api.TRAIN_OPTIONS) - SECTIONS:
        assert key in names or key in switched, key
    for flag in SWITCHES:
        assert flag in names, flag


@pytest.mark.parametrize(
    ("name", "entry"), [("eval", api.evaluate), ("validate", api.validate), ("train", api.train)]
)
def test_a_command_and_its_api_call_take_the_same_settings(name, entry):
    settings = set(Settings.model_fields)
    options = {p.name for p in command(name).params} & settings
    keywords = set(inspect.signature(entry).parameters) & settings
    if entry is api.train:
        keywords = set(api.TRAIN_OPTIONS)
        options |= {key for key, _ in SWITCHES.values()}
    assert options <= keywords, options - keywords
    assert keywords - SECTIONS <= options, keywords - SECTIONS - options


@pytest.mark.parametrize("name", ["train", "eval", "validate", "models", "runs", "log"])
def test_every_default_a_help_names_is_the_settings_default(name):
    checked = 0
    for param in command(name).params:
        found = re.search(r"\[default: ([^\]]+)\]", getattr(param, "help", None) or "")
        if found is None or param.name not in Settings.model_fields:
            continue
        assert found.group(1) == str(Settings.model_fields[param.name].default), param.name
        checked += 1
    if name == "train":
        assert checked >= 12


def test_the_cli_hands_the_api_exactly_the_settings_given(monkeypatch):
    from typer.testing import CliRunner

    seen: dict[str, object] = {}

    def plan(skill, suite, **options):
        seen.update(options)
        raise typer.Exit(0)

    monkeypatch.setattr(api, "plan", plan)
    args = ["train", "s", "--tasks", "t.yaml", "--dry-run", "--epochs", "2", "--seed", "0"]
    args += ["--no-slow-update", "--gate-full", "--min-delta", "0", "--budget-usd", "1.5"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert seen == {
        "epochs": 2,
        "seed": 0,
        "slow_update": False,
        "gate_full": True,
        "min_delta": 0.0,
        "budget_usd": 1.5,
    }
    assert train_options({"allow_unpriced": False, "gate_full": False, "lr": None}) == {}


@pytest.mark.parametrize("entry", [api.train, api.plan])
def test_a_keyword_that_is_no_train_setting_is_a_type_error(entry):
    with pytest.raises(TypeError, match=rf"{entry.__name__}\(\) got an unexpected .* 'epoch'"):
        entry("skill", "suite", epoch=2)  # type: ignore[call-arg]
