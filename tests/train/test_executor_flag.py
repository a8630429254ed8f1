"""`--executor local|ray` on eval, train, validate and models: the flag wins over
skillopt.yaml (`ray:` stays there); an unreachable cluster is one line naming
ray.address and exit 2, at once (Ray alone would retry for minutes); eval with
`--executor ray` on the tests' real cluster gives the local executor's rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import write_skill, write_suite
from ray_cluster import free_port, require_ray
from test_ray_executor import rows
from typer.testing import CliRunner

from skillopt.cli.main import app
from skillopt.errors import InputError
from skillopt.rollouts import ray_executor as executor

ROOT = Path(executor.__file__).resolve().parents[2]  # the checkout holding skillopt/
runner = CliRunner()


# a port of 127.0.0.1 nothing listens on (bound, then released)
closed_port = free_port


def words(root: Path, splits: list[str]) -> tuple[Path, Path]:
    """A skill and a suite of one item per split, each answered by repeating it."""
    skill = write_skill(root / "skills", "words", body="# Words\n\nRepeat the item.\n")
    items = [
        {"id": f"t{i}", "input": f"w{i}", "expected": f"w{i}", "split": split}
        for i, split in enumerate(splits)
    ]
    return skill, write_suite(root / "words.yaml", items)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("ray://head.example:10002", ("head.example", 10002)),
        ("ray://head.example", ("head.example", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("local", None),
        ("head.example", None),  # no port: Ray's to interpret
    ],
)
def test_the_address_probed_is_the_one_ray_would_use(address, expected, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert executor._host_port(address) == expected


def test_ray_address_in_the_environment_wins_as_in_ray(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.1.2.3:6380")
    assert executor._host_port("127.0.0.1:6379") == ("10.1.2.3", 6380)
    assert executor._host_port("ray://h:10001") == ("h", 10001)


def test_a_refused_address_is_one_input_error_naming_ray_address(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    port = closed_port()
    with pytest.raises(InputError) as caught:
        executor._probe(f"127.0.0.1:{port}")
    assert caught.value.field == "ray.address"
    assert str(caught.value).startswith(
        f"ray.address: no Ray cluster at '127.0.0.1:{port}' (127.0.0.1:{port} refused the "
        "connection)"
    )
    executor._probe("local")  # a private cluster is started, not probed


def run_python(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Python in a process of its own (Ray connects once per process, and this one
    may already be connected to the tests' cluster), without this process's SKILLOPT_
    and RAY_ variables but with `env`, importing the skillopt under test."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "RAY_"))}
    clean.update(env or {})
    clean["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_python("-m", "skillopt", *args, cwd=cwd)


@pytest.mark.parametrize("command", ["eval", "validate", "train", "models"])
def test_executor_ray_without_a_cluster_is_one_line_and_exit_2(command, isolated):
    require_ray()
    port = closed_port()
    (isolated / "skillopt.yaml").write_text(
        yaml.safe_dump({"ray": {"address": f"127.0.0.1:{port}"}})
    )
    skill, suite = words(isolated, ["train", "train", "val", "val", "test", "test"])
    args = {
        "eval": ["eval", str(skill), "--tasks", str(suite), "--target", "scripted/echo"],
        "validate": ["validate", str(skill), "--tasks", str(suite), "--target", "scripted/echo"],
        "train": [
            "train",
            str(skill),
            "--tasks",
            str(suite),
            "--target",
            "scripted/echo",
            "--optimizer",
            "exemplars",
        ],
        "models": ["models"],
    }[command]
    started = time.monotonic()
    done = run_cli(*args, "--executor", "ray", cwd=isolated)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("warning:")]  # a small suite's
    assert lines == [
        f"error: ray.address: no Ray cluster at '127.0.0.1:{port}' (127.0.0.1:{port} refused "
        "the connection); start one with `ray start --head`, or set ray.address in "
        "skillopt.yaml (host:6379, ray://host:10001, or 'local' for a private one)"
    ]
    assert time.monotonic() - started < 60
    assert not (isolated / "runs").exists()  # no store, no run was made


@pytest.mark.ray
def test_a_private_cluster_runs_with_a_token_and_leaves_the_home_alone(isolated):
    """`ray.address: local` starts a cluster for the run with token authentication,
    its token in the environment: Ray alone would write ~/.ray/auth_token into the
    user's home and print a warning about it."""
    require_ray()
    home = Path(os.environ["HOME"])
    (isolated / "skillopt.yaml").write_text(
        yaml.safe_dump({"executor": "ray", "ray": {"address": "local"}})
    )
    skill, suite = words(isolated, ["test"] * 4)
    probe = isolated / "probe.py"  # prints what a task on the cluster sees
    probe.write_text(
        "import os, ray, sys\n"
        "from skillopt import api\n"
        "result = api.evaluate(sys.argv[1], sys.argv[2], split='test', target='scripted/echo')\n"
        "print('scores', sorted(r.score for r in result.all_rollouts))\n"
        "seen = ray.get(ray.remote(lambda: os.environ.get('RAY_AUTH_MODE')).remote())\n"
        "print('auth', seen)\n"
    )
    done = run_python(str(probe), str(skill), str(suite), cwd=isolated, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scores [1.0, 1.0, 1.0, 1.0]" in done.stdout and "auth token" in done.stdout
    assert "Token authentication" not in done.stdout + done.stderr
    assert not (home / ".ray").exists()


@pytest.mark.parametrize("via", ["address", "ray-client"])
def test_a_worker_dying_prints_nothing_of_ray_on_stdout(ray_cluster, isolated, via):
    """A worker that dies mid-rollout (no retries) leaves it unscored, error_kind
    executor. Ray's driver prints "(raylet) A worker died…" to stdout from a thread
    of its own; with executor: ray that goes to skillopt's log, and stdout holds
    only what skillopt writes there (here, the evaluation's JSON)."""
    skill, suite = words(isolated, ["test"])
    client = {"address": ray_cluster.client_address} if via == "ray-client" else {}
    ray_section = ray_cluster.settings(max_retries=0, **client)
    script = isolated / "dies.py"
    script.write_text(
        "import json, logging, os, sys, threading\n"
        "from skillopt import api\n"
        "from skillopt.config import RaySettings, Settings\n"
        "from skillopt.models import ScriptedModel, register_model\n"
        "heard = threading.Event()\n"
        "class Ear(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        if 'worker died' in record.getMessage():\n"
        "            heard.set()\n"
        "logging.getLogger('skillopt').addHandler(Ear())\n"
        "logging.getLogger('skillopt').setLevel(logging.INFO)\n"
        "register_model('scripted/dies', ScriptedModel(lambda m: os._exit(1), name='dies'))\n"
        "settings = Settings(target='scripted/dies', executor='ray',\n"
        f"                    ray=RaySettings(**{ray_section!r}))\n"
        "result = api.evaluate(sys.argv[1], sys.argv[2], split='test', settings=settings)\n"
        "(lost,) = result.all_rollouts\n"
        "print(json.dumps({'scored': lost.scored, 'kind': lost.error_kind}))\n"
        "sys.stdout.flush()\n"
        "print(json.dumps({'heard': heard.wait(float(sys.argv[3]))}))\n"
    )
    wait = "120" if via == "address" else "0"
    done = run_python(
        str(script), str(skill), str(suite), wait, cwd=isolated, env=ray_cluster.env, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # only our JSON
    assert lines[0] == {"scored": False, "kind": "executor"}
    if via == "address":  # through Ray Client the driver is not sent them at all
        assert lines[1] == {"heard": True}
    assert "worker died" not in done.stderr.lower()


def test_a_second_cluster_in_one_process_is_refused(ray_cluster):
    """Ray connects a process to one cluster with one runtime_env: an evaluation that
    names another is refused in one line, not run on the first cluster."""
    from skillopt.config import RaySettings

    same = RaySettings(**ray_cluster.settings())
    assert executor.connect(same).is_initialized()
    assert executor.connect(RaySettings(**ray_cluster.settings())).is_initialized()  # again: fine
    with pytest.raises(InputError) as other:
        executor.connect(RaySettings(address="127.0.0.1:1"))
    assert other.value.field == "ray.address"
    assert f"already runs rollouts on the Ray cluster '{ray_cluster.address}'" in str(other.value)
    changed = {**ray_cluster.settings(), "runtime_env": {"env_vars": {"X": "1"}}}
    with pytest.raises(InputError) as env:
        executor.connect(RaySettings(**changed))
    assert env.value.field == "ray.runtime_env"


def test_executor_local_overrides_executor_ray_in_the_file(world, models):
    """With `executor: ray` and an unreachable cluster in skillopt.yaml, `--executor
    local` runs here."""
    (world["root"] / "skillopt.yaml").write_text(
        yaml.safe_dump({"executor": "ray", "ray": {"address": f"127.0.0.1:{closed_port()}"}})
    )
    args = [str(world["skill"]), "--tasks", str(world["suite"]), "--target", "scripted/test-target"]
    res = runner.invoke(app, ["eval", *args, "--executor", "local"])
    assert res.exit_code == 0, res.output


def test_a_ray_client_address_runs_on_the_cluster_as_locally(ray_cluster, world):
    """ray://host:port (Ray Client, through the head's client server): the same
    store rows as the local executor, and `models --executor ray` sees both nodes."""
    root = world["root"]
    args = ["eval", str(world["skill"]), "--tasks", str(world["suite"]), "--target"]
    args += ["scripted/echo", "--split", "all"]
    local = runner.invoke(app, [*args, "--store", "local.sqlite"])
    assert local.exit_code == 0, local.output
    (root / "skillopt.yaml").write_text(
        yaml.safe_dump({"ray": ray_cluster.settings(address=ray_cluster.client_address)})
    )
    remote = run_cli(*args, "--store", "client.sqlite", "--executor", "ray", cwd=root)
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert rows(root / "client.sqlite") == rows(root / "local.sqlite")
    assert len(rows(root / "client.sqlite")) == 16
    listing = run_cli("models", "--executor", "ray", cwd=root)
    assert listing.returncode == 0, listing.stdout + listing.stderr
    assert "Ray cluster: 2 live node(s)" in listing.stdout


def test_eval_executor_ray_flag_equals_the_local_executor(
    ray_cluster,
    world,
    models,
    monkeypatch,
):
    root = world["root"]
    (root / "skillopt.yaml").write_text(yaml.safe_dump({"ray": ray_cluster.settings()}))
    made = []
    real_init = executor.RayExecutor.__init__

    def counting_init(self, *args, **kwargs):
        made.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(executor.RayExecutor, "__init__", counting_init)
    args = [str(world["skill"]), "--tasks", str(world["suite"]), "--target", "scripted/test-target"]
    local = runner.invoke(app, ["eval", *args, "--split", "all", "--store", "local.sqlite"])
    assert local.exit_code == 0, local.output
    assert made == []  # the file's `ray:` alone does not choose the cluster
    remote = runner.invoke(
        app, ["eval", *args, "--split", "all", "--store", "ray.sqlite", "--executor", "ray"]
    )
    assert remote.exit_code == 0, remote.output
    assert len(made) == 1
    assert rows(root / "ray.sqlite") == rows(root / "local.sqlite")
    assert len(rows(root / "ray.sqlite")) == 16


@pytest.mark.parametrize(
    ("ray_settings", "field", "says"),
    [
        ({"address": "garbage::://"}, "ray.address", "'garbage::://' is not a Ray cluster address"),
        (
            {"address": "http://127.0.0.1:1"},
            "ray.address",
            "'http://127.0.0.1:1' is not a Ray cluster address (Ray connects to a cluster, "
            "not over http://)",
        ),
        (
            {"address": "127.0.0.1:1", "runtime_env": {"pip": 5}},
            "ray.runtime_env",
            "Ray refuses it: runtime_env['pip'] must be of type str or List[str]",
        ),
    ],
)
def test_ray_settings_ray_cannot_use_are_one_line_naming_the_setting(
    ray_settings, field, says, isolated
):
    """Ray itself raised RuntimeError, ValueError, or a TypeError after 22 s for these:
    now one line naming the setting, exit 2, before Ray is asked to connect."""
    require_ray()
    (isolated / "skillopt.yaml").write_text(yaml.safe_dump({"ray": ray_settings}))
    skill, suite = words(isolated, ["train", "val", "test"])
    started = time.monotonic()
    res = runner.invoke(
        app,
        ["eval", str(skill), "--tasks", str(suite), "--target", "scripted/echo"]
        + ["--executor", "ray"],
    )
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {field}: {says}"), res.output
    assert "internal error" not in res.output
    assert time.monotonic() - started < 15
    assert not (isolated / "runs").exists()


@pytest.mark.parametrize(
    "address", ["auto", "local", "127.0.0.1:6379", "ray://head:10001", "ray://h", "[::1]:6379"]
)
def test_every_address_shape_ray_connects_to_passes_the_check(address):
    from skillopt.rollouts.ray_settings import check_address

    check_address(address)  # raises on a shape Ray does not take
