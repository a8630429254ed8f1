"""What an agent (and an agent-written verifier) can see of skillopt, for real: a
`skillopt eval` subprocess with a secret in its environment runs the command harness,
whose agent reads /proc/$PPID/{environ,cmdline,cwd} and scans every /proc/*/environ.

Run as root (CI), the checks run as uid 65534 through `setpriv`, since root may read
any process anyway; run as anyone else, they run as that user. Nothing is skipped for
not being root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from helpers import write_skill, write_suite

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-secret-1234567890"
NOBODY = 65534

# The agent: what it can find of its parent and of every other process goes to a report
# file (raw, before skillopt blanks any secret in what it stores) and is its answer.
AGENT = r"""#!/bin/sh
report="$1"
{
  echo "pid=$$ ppid=$PPID uid=$(id -u)"
  echo "--- parent environ"; tr '\0' '\n' < "/proc/$PPID/environ"
  echo "--- parent cmdline"; tr '\0' ' ' < "/proc/$PPID/cmdline"; echo
  echo "--- parent cwd"; readlink "/proc/$PPID/cwd"; ls "/proc/$PPID/cwd"
  echo "--- every environ"
  for f in /proc/[0-9]*/environ; do
    grep -qa sk-test-secret "$f" 2>/dev/null && echo "secret in $f"
  done
  echo "--- every cmdline"
  for d in /proc/[0-9]*; do echo "${d#/proc/}: $(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)"; done
  echo "--- own environment"; env
} > "$report" 2>&1
echo made > made-by-agent.txt
cat > verify.sh <<'VERIFY'
{
  echo "pid=$$ ppid=$PPID"
  echo "key=[$OPENAI_API_KEY]"
  echo "--- parent environ"; tr '\0' '\n' < "/proc/$PPID/environ"
  echo "--- every environ"
  for f in /proc/[0-9]*/environ; do
    grep -qa sk-test-secret "$f" 2>/dev/null && echo "secret in $f"
  done
  echo "--- every cmdline"
  for d in /proc/[0-9]*; do echo "${d#/proc/}: $(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)"; done
  echo "--- own environment"; env
} > "$SKILLOPT_REPORT_DIR/verifier.txt" 2>&1
cat "$SKILLOPT_REPORT_DIR/verifier.txt"
VERIFY
cat "$report"
"""


class User:
    """Runs programs as the test's user: uid 65534 when we are root, else ourselves,
    with a Python that user may execute and the skillopt under test importable."""

    def __init__(self, base: Path):
        self.base = base
        self.root = os.geteuid() == 0
        self.uid = NOBODY if self.root else os.getuid()
        self.prefix = (
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            if self.root
            else []
        )
        self.python = self._find_python()
        # the packages this test runs with, for a Python that is not this one; as root,
        # a copy the other user can read wherever the checkout and its venv live
        paths = (
            [self._readable_copy()]
            if self.root
            else list(
                dict.fromkeys(
                    [
                        str(ROOT),
                        sysconfig.get_paths()["purelib"],
                        sysconfig.get_paths()["platlib"],
                        *(p for p in sys.path if p.endswith("-packages")),
                    ]
                )
            )
        )
        self.env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.dir("home")),
            "TMPDIR": str(self.dir("tmp")),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join(paths),
            "OPENAI_API_KEY": SECRET,
        }

    def _readable_copy(self) -> str:
        """skillopt and the installed packages its CLI imports, copied where uid 65534
        can read them (a checkout under /root, say, it cannot reach)."""
        probe = (
            "import json, sys; import skillopt.cli.main, skillopt.api, "
            "skillopt.harness.command, skillopt.store.audit, git; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
        )
        names = json.loads(
            subprocess.run(
                [sys.executable, "-c", probe], check=True, capture_output=True, text=True
            ).stdout
        )
        dest = self.base / "py"
        dest.mkdir()
        sites = [p for p in sys.path if p.endswith("-packages")]
        for name in names:
            src = (
                ROOT / "skillopt"
                if name == "skillopt"
                else next(
                    (
                        Path(s) / n
                        for s in sites
                        for n in (name, f"{name}.py")
                        if (Path(s) / n).exists()
                    ),
                    None,
                )
            )
            if src is None:  # the standard library, or a module built into Python
                continue
            if src.is_dir():
                shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, dest / src.name)
        for path in [dest, *dest.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return str(dest)

    def dir(self, name: str) -> Path:
        d = self.base / name
        d.mkdir(exist_ok=True)
        self.own(d)
        return d

    def own(self, path: Path) -> None:
        if self.root:
            for p in [path, *path.rglob("*")]:
                os.chown(p, NOBODY, NOBODY)

    def _find_python(self) -> str:
        want = "{}.{}".format(*sys.version_info[:2])
        names = [
            sys.executable,
            shutil.which(f"python{want}"),
            f"/usr/bin/python{want}",
            f"/usr/local/bin/python{want}",
        ]
        for exe in dict.fromkeys(n for n in names if n):
            try:  # through sh: setpriv itself may still exec what the user cannot
                out = subprocess.run(
                    [
                        *self.prefix,
                        "/bin/sh",
                        "-c",
                        '"$0" -c "$1"',
                        exe,
                        "import sys; print('%d.%d' % sys.version_info[:2])",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    cwd="/",
                    env={"PATH": "/usr/bin:/bin"},
                )
            except OSError:
                continue
            if out.returncode == 0 and out.stdout.strip() == want:
                return exe
        pytest.fail(f"no Python {want} that uid {self.uid} may run (tried {names})")

    def run(self, argv: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.prefix, *argv],
            cwd=cwd,
            env=self.env,
            text=True,
            capture_output=True,
            timeout=120,
            **kw,
        )


@pytest.fixture
def user(tmp_path):
    if os.geteuid() == 0:  # uid 65534 cannot reach tmp_path (under root's 0700 dirs)
        base = Path(tempfile.mkdtemp(prefix="isolation-", dir="/tmp"))
        os.chmod(base, 0o755)
    else:
        base = tmp_path / "isolation"
        base.mkdir()
    yield User(base)
    shutil.rmtree(base, ignore_errors=True)


def project(user: User, *, scorer: dict | None = None, pid_namespace: str = "auto") -> dict:
    """A project with the command harness running AGENT, one task, and a report dir."""
    work, reports = user.dir("project"), user.dir("reports")
    agent = user.dir("agent") / "agent.sh"  # outside the project: its path is no clue
    agent.write_text(AGENT, encoding="utf-8")
    user.own(agent)
    skill = write_skill(work / "skills", "probe")
    suite = write_suite(
        work / "tasks" / "probe.yaml",
        [{"id": "look", "input": "look around", "expected": "pid=", "split": "test"}],
        scorer=scorer or {"type": "contains"},
    )
    (work / "skillopt.yaml").write_text(
        yaml.safe_dump(
            {
                "command": {"argv": ["/bin/sh", str(agent), str(reports / "agent.txt")]},
                "agent": {
                    "keep_workspaces": "all",
                    "pid_namespace": pid_namespace,
                    "env": ["SKILLOPT_REPORT_DIR"],
                },
            }
        ),
        encoding="utf-8",
    )
    user.env["SKILLOPT_REPORT_DIR"] = str(reports)
    user.own(work)
    return {"work": work, "skill": skill, "suite": suite, "reports": reports}


def evaluate(user: User, p: dict) -> dict:
    out = p["work"] / "result.json"
    start = time.monotonic()
    res = user.run(
        [
            user.python,
            "-m",
            "skillopt",
            "eval",
            str(p["skill"]),
            "--tasks",
            str(p["suite"]),
            "--harness",
            "command",
            "--json",
            str(out),
        ],
        p["work"],
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - start < 60
    return json.loads(out.read_text(encoding="utf-8"))


def namespaces_for(user: User) -> bool:
    res = user.run(
        [
            user.python,
            "-c",
            "from skillopt.harness import process; print(process.pid_namespace_available())",
        ],
        user.base,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.strip() == "True"


def section(report: str, title: str) -> str:
    return report.split(f"--- {title}\n", 1)[1].split("\n--- ", 1)[0]


def read_report(path: Path) -> str:
    """A report as text: it quotes other processes' command lines, which are bytes that
    need not be UTF-8 on a busy machine."""
    return path.read_text(encoding="utf-8", errors="replace")


# ---------------------------------------------------------------------- the agent
def test_the_agent_sees_no_secret_no_suite_and_no_cwd_of_skillopt(user):
    p = project(user)
    result = evaluate(user, p)
    report = read_report(p["reports"] / "agent.txt")
    assert f"uid={user.uid}" in report  # it ran, as that user
    assert SECRET not in report
    assert "secret in" not in section(report, "every environ")
    assert "OPENAI_API_KEY" not in section(report, "own environment")
    assert "SKILLOPT_REPORT_DIR=" in section(report, "own environment")  # agent.env works
    if namespaces_for(user):
        # its parent is the namespace's init; skillopt, its cwd and its command line
        # (the suite path) are nowhere to be seen
        assert "ppid=1 " in report
        assert str(p["work"]) not in report
        assert "skillopt" not in section(report, "every cmdline")
    else:  # non-dumpable only: environ and cwd are closed, the command line is not
        assert "Permission denied" in section(report, "parent environ")
        assert str(p["work"]) not in section(report, "parent cwd")
    assert SECRET not in json.dumps(result)
    # the files it made in its workspace are the user's
    (made,) = (p["work"] / "runs").rglob("made-by-agent.txt")
    assert made.stat().st_uid == user.uid


def test_without_the_namespace_skillopt_is_still_non_dumpable(user):
    p = project(user, pid_namespace="off")
    evaluate(user, p)
    report = read_report(p["reports"] / "agent.txt")
    assert SECRET not in report
    assert "secret in" not in section(report, "every environ")
    assert "Permission denied" in section(report, "parent environ")
    assert "Permission denied" in section(report, "parent cwd")
    assert str(p["work"]) not in section(report, "parent cwd")
    # what is NOT closed without a PID namespace: the same user's command lines
    assert "skillopt eval" in section(report, "parent cmdline")


# ---------------------------------------------------------------------- the verifier
def test_an_agent_written_verifier_gets_no_secret(user):
    p = project(
        user, scorer={"type": "command", "run": "sh verify.sh", "env": ["SKILLOPT_REPORT_DIR"]}
    )
    result = evaluate(user, p)
    report = read_report(p["reports"] / "verifier.txt")
    assert "key=[]" in report
    assert SECRET not in report
    assert "secret in" not in section(report, "every environ")
    assert "SKILLOPT_ANSWER_FILE=" in section(report, "own environment")
    if namespaces_for(user):  # only the verifier's own processes: nothing of skillopt's
        assert "skillopt" not in section(report, "every cmdline")
        assert str(p["work"]) not in section(report, "every cmdline")
    assert SECRET not in json.dumps(result)


def test_a_verifier_that_is_given_the_key_has_it_blanked_in_its_feedback(user):
    p = project(
        user,
        scorer={
            "type": "command",
            "run": 'echo "key=$OPENAI_API_KEY"; exit 1',
            "env": ["OPENAI_API_KEY"],
        },
    )
    result = evaluate(user, p)
    text = json.dumps(result)
    assert "key=" in text  # the feedback is there
    assert SECRET not in text


# ---------------------------------------------------------------------- non-dumpable
SIBLING_PROBE = r"""
import json, os, sys
pid = int(sys.argv[1])
out = {}
for name in ("environ", "cmdline", "cwd"):
    path = f"/proc/{pid}/{name}"
    try:
        out[name] = (os.readlink(path) if name == "cwd"
                     else open(path, "rb").read().decode("utf-8", "replace"))
    except OSError as exc:
        out[name] = f"denied: {exc.strerror}"
print(json.dumps(out))
"""

HOLDER = r"""
import os, sys
from pathlib import Path
from skillopt.harness import process
io = Path(sys.argv[1])
print(os.getpid(), flush=True)
sys.stdin.readline()  # the sibling looks now: dumpable still
process.run_process(["/bin/true"], cwd=io, env={}, stdin_text="", timeout=30, io_dir=io,
                    pid_namespace=False)
print("started an agent", flush=True)
sys.stdin.readline()  # the sibling looks again
"""


def test_a_sibling_process_of_the_same_user_cannot_read_skillopts_environ(user):
    io = user.dir("holder")
    holder = subprocess.Popen(
        [*user.prefix, user.python, "-c", HOLDER, str(io)],
        cwd=io,
        env=user.env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pid = int(holder.stdout.readline())

        def look() -> dict:
            res = user.run([user.python, "-c", SIBLING_PROBE, str(pid)], user.base)
            assert res.returncode == 0, res.stderr
            return json.loads(res.stdout)

        before = look()
        assert SECRET in before["environ"]  # the control: readable while dumpable
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "started an agent"
        after = look()
        assert after["environ"].startswith("denied")
        assert after["cwd"].startswith("denied")
        assert "skillopt" not in after["cwd"] and str(io) not in after["cwd"]
        assert "-c" in after["cmdline"]  # not closed: the command line stays readable
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0, holder.stderr.read()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
