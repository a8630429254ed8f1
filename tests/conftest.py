"""Shared fixtures: every test runs in its own directory with its own home, so no
test reads or writes the real user directory, caches or rollout store; `agents`
puts the stand-in `claude` and `codex` executables first on PATH."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

# tests/ is where the shared test modules are found, each under one name:
# `helpers`, `fakes`, `train.world` (never plain `world`), `ray_cluster`, ...
sys.path.insert(0, str(Path(__file__).parent))

# Hugging Face's libraries read these once, when first imported: set before any test
# runs, no test can reach the hub (a hub id is then an error, as it is offline)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

# one Ray cluster for the whole session: a session fixture imported into several
# test modules would be one fixture per module, each starting a cluster of its own
from ray_cluster import ray_cluster  # noqa: E402, F401

# Tests measured at a second or more each (a child process or two, a deliberate wait
# for a timeout or a kill, a whole training run through an agent CLI) with
# `--durations`: they are `slow`, so that `-m quick` stays under two minutes on two
# cores. A test that is slow only because it is the first to import litellm or a
# provider SDK is not listed: whichever test came next would pay the import instead.
# tests/test_test_layout.py checks that every name here is a test that exists.
MEASURED_SLOW = (
    "tests/cli/test_interrupt.py::test_sigint_keeps_finished_rollouts_and_rerun_resumes",
    "tests/cli/test_keys_cli.py::test_eval_without_the_key_stops_in_one_line_before_any_request",
    "tests/cli/test_keys_cli.py::test_train_names_every_role_and_where_its_model_came_from",
    "tests/cli/test_live_terminal.py::test_eval_in_an_80_column_terminal",
    "tests/cli/test_live_terminal.py::test_piped_output_gets_plain_progress_lines_and_each_decision_once",
    "tests/cli/test_live_terminal.py::test_train_in_an_80_column_terminal_keeps_decisions_apart_from_the_bar",
    "tests/cli/test_eval_http.py::test_eval_over_http_with_a_rate_limit_on_the_way",
    "tests/faults/test_isolation.py::test_a_verifier_that_is_given_the_key_has_it_blanked_in_its_feedback",
    "tests/faults/test_isolation.py::test_a_sibling_process_of_the_same_user_cannot_read_skillopts_environ",
    "tests/faults/test_isolation.py::test_an_agent_written_verifier_gets_no_secret",
    "tests/faults/test_isolation.py::test_the_agent_sees_no_secret_no_suite_and_no_cwd_of_skillopt",
    "tests/faults/test_isolation.py::test_without_the_namespace_skillopt_is_still_non_dumpable",
    "tests/faults/test_store_races.py::test_a_killed_claimer_does_not_block_the_others",
    "tests/faults/test_store_races.py::test_a_new_audit_repository_created_by_many_processes_at_once",
    "tests/faults/test_store_races.py::test_two_evals_of_the_same_skill_pay_each_rollout_once",
    "tests/harness/test_agent_cli.py::test_ctrl_c_or_a_kill_stops_the_agents_still_running",
    "tests/harness/test_claude_code.py::test_a_hang_is_killed_with_its_whole_process_group",
    "tests/harness/test_codex.py::test_a_hang_is_killed",
    "tests/harness/test_process.py::test_namespaced_timeout_kills_the_real_processes",
    "tests/harness/test_process.py::test_timeout_escalates_to_sigkill_after_the_grace",
    "tests/harness/test_process.py::test_timeout_kills_the_child_and_its_grandchild",
    "tests/harness/test_train_agents.py::test_training_through_an_agent_harness",
    "tests/harness/test_train_agents.py::test_resume_through_an_agent_harness_reuses_stored_rollouts",
    "tests/models/test_direct_clients.py::test_an_openai_or_anthropic_eval_never_imports_litellm",
    "tests/models/test_litellm_http.py::test_safe_from_many_threads",
    "tests/plugins/test_plugins.py::test_a_fresh_process_finds_the_plugin_through_its_installed_metadata",
    "tests/ship/test_github_example.py::test_validate_script_runs_as_written",
    "tests/store/test_concurrency.py::test_a_long_rollout_keeps_its_claim",
    "tests/test_readme.py::test_readme_commands_without_the_embedded_model",
    "tests/train/test_executor_flag.py::test_executor_ray_without_a_cluster_is_one_line_and_exit_2",
    "tests/train/test_html_report.py::test_open_hands_the_page_to_the_users_browser",
)

# what `-m quick` leaves out: everything slow, and everything that needs a program
# or a cluster beyond Python (the real agent CLIs, Ray, a headless browser)
NOT_QUICK = ("slow", "realcli", "ray", "browser")


def pytest_collection_modifyitems(items):
    """A test on the Ray cluster is a Ray test (`-m ray`, `-m "not ray"`); a measured
    slow test is `slow`; every other test that needs nothing beyond Python is
    `quick` (`-m quick`, the loop to run while working)."""
    slow = frozenset(MEASURED_SLOW)
    for item in items:
        if isinstance(item, pytest.Function) and "ray_cluster" in item.fixturenames:
            item.add_marker(pytest.mark.ray)
        if item.nodeid.split("[")[0] in slow:
            item.add_marker(pytest.mark.slow)
        if not any(item.get_closest_marker(name) for name in NOT_QUICK):
            item.add_marker(pytest.mark.quick)


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory):
    """One cache for the session (never the real one): the embedded model's
    weights are assembled into it once, not once per test."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, session_cache):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(session_cache))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for var in list(os.environ):
        if var.startswith("SKILLOPT_"):
            monkeypatch.delenv(var)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture(autouse=True)
def no_leaked_workspaces(tmp_path, monkeypatch):
    """Temporary files of this test go to its own directory, and every agent workspace
    made there is kept or removed by the end: none is left behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield
    leaked = sorted(p.name for p in tmp.glob("skillopt-*"))
    assert not leaked, f"temporary directories left behind: {leaked}"


FAKES = Path(__file__).resolve().parent / "fakes"


class StandIns:
    """Installs stand-in CLIs into a bin directory that is first on PATH."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir

    def install(self, name: str) -> Path:
        path = self.bin / name
        path.write_text(
            f"#!{sys.executable}\n"
            "import sys\n"
            f"sys.path.insert(0, {str(FAKES)!r})\n"
            "from agent_cli import main\n"
            f"sys.exit(main({name!r}, {str(self.bin)!r}))\n",
            encoding="utf-8",
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def configure(self, name: str, **config) -> None:
        (self.bin / f"{name}.json").write_text(json.dumps(config), encoding="utf-8")

    def calls(self, name: str) -> list[dict]:
        path = self.bin / f"{name}.calls.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def hang_pids(self) -> list[int]:
        path = self.bin / "hang.pids"
        if not path.is_file():
            return []
        return [int(p) for line in path.read_text().split("\n") for p in line.split()]


@pytest.fixture
def agents(tmp_path, monkeypatch) -> StandIns:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    standins = StandIns(bin_dir)
    standins.install("claude")
    standins.install("codex")
    return standins


@pytest.fixture
def no_keys(monkeypatch):
    """No provider key and no provider base URL in the environment."""
    from skillopt.models import keys

    for var in list(os.environ):
        if var.endswith(("_API_KEY", "_AUTH_TOKEN", "_API_BASE", "_BASE_URL", "_TOKEN")):
            monkeypatch.delenv(var)
    for provider in keys.PROVIDERS:
        for var in provider.keys:
            monkeypatch.delenv(var, raising=False)


@pytest.fixture
def describer():
    """A scripted optimizer, `scripted/describer`, registered for the test: it answers
    every description request with routing_rule.DESCRIBE_GOOD (the calls it was
    asked are on the model yielded)."""
    import routing_rule

    from skillopt.models import ScriptedModel, register_model, unregister_model

    good = routing_rule.DESCRIBE_GOOD
    reply = json.dumps({"description": good, "rationale": "separate it from receipts"})
    model = ScriptedModel(lambda messages: reply, name="scripted/describer")
    register_model("scripted/describer", model)
    yield model
    unregister_model("scripted/describer")
