"""skillopt.harness.process with real child processes (`sys.executable -c ...`):
output through files, stdin, cwd, the exact environment, timeouts that kill the
whole process group, stragglers, kill_all from another thread, scrubbed_env, tail."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import alive, wait_dead

from skillopt.harness import dumpable, process
from skillopt.harness.process import (
    BASE_ENV,
    ProcessResult,
    kill_all,
    live_count,
    run_process,
    scrubbed_env,
    tail,
)

PY = sys.executable
# PYTHONCOERCECLOCALE=0: under the C locale the child interpreter would otherwise add
# LC_CTYPE to its own environment (PEP 538), which would blur the "exactly" below.
MIN_ENV = {"PYTHONCOERCECLOCALE": "0"}


@pytest.fixture
def io_dir(tmp_path) -> Path:
    d = tmp_path / "io"
    d.mkdir()
    return d


@pytest.fixture(autouse=True)
def no_leftover_agents():
    assert live_count() == 0
    yield
    assert live_count() == 0, "run_process left an entry in the live set"


def run_py(
    code: str,
    io_dir: Path,
    *,
    cwd: Path | None = None,
    env: dict | None = None,
    stdin_text: str = "",
    timeout: float = 20.0,
) -> ProcessResult:
    return run_process(
        [PY, "-c", code],
        cwd=cwd or Path.cwd(),
        env=dict(MIN_ENV) if env is None else env,
        stdin_text=stdin_text,
        timeout=timeout,
        io_dir=io_dir,
    )


def wait_for_file(path: Path, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        if time.monotonic() >= deadline:
            raise AssertionError(f"{path} was never written")
        time.sleep(0.02)


# -- run_process: the ordinary run -------------------------------------------------------
def test_stdout_stderr_and_returncode(io_dir):
    res = run_py(
        "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)", io_dir
    )
    assert res.returncode == 3
    assert res.timed_out is False
    assert res.stdout == "to out\n"
    assert res.stderr == "to err\n"
    assert res.duration_s >= 0


def test_returncode_zero_and_empty_output(io_dir):
    res = run_py("pass", io_dir)
    assert (res.returncode, res.stdout, res.stderr, res.timed_out) == (0, "", "", False)


def test_output_goes_through_files_in_io_dir(io_dir):
    res = run_py(
        "import sys; sys.stdout.write('OUT'); sys.stderr.write('ERR')", io_dir, stdin_text="IN"
    )
    assert (io_dir / "stdin.txt").read_text(encoding="utf-8") == "IN"
    assert (io_dir / "stdout.txt").read_text(encoding="utf-8") == "OUT" == res.stdout
    assert (io_dir / "stderr.txt").read_text(encoding="utf-8") == "ERR" == res.stderr


def test_stdin_text_is_delivered(io_dir):
    text = "first line\nsecond line — ünïcödé ✓\n"
    res = run_py(
        "import sys; data = sys.stdin.buffer.read(); sys.stdout.buffer.write(b'<' + data + b'>')",
        io_dir,
        stdin_text=text,
    )
    assert res.returncode == 0
    assert res.stdout == f"<{text}>"


def test_stdin_reaches_eof(io_dir):
    # a child reading stdin to the end must not hang waiting for more
    res = run_py("import sys; print(len(sys.stdin.read()))", io_dir, stdin_text="abc", timeout=10)
    assert res.timed_out is False
    assert res.stdout.strip() == "3"


def test_invalid_utf8_output_is_replaced_not_fatal(io_dir):
    res = run_py("import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end')", io_dir)
    assert res.stdout == "ok \ufffd\ufffd end"


def test_cwd_is_honoured(io_dir, tmp_path):
    where = tmp_path / "elsewhere"
    where.mkdir()
    (where / "marker.txt").write_text("here")
    res = run_py(
        "import os; print(os.getcwd()); print(open('marker.txt').read())", io_dir, cwd=where
    )
    out = res.stdout.splitlines()
    assert Path(out[0]).resolve() == where.resolve()
    assert out[1] == "here"
    assert Path.cwd().resolve() != where.resolve()  # our own cwd is untouched


def test_env_is_exactly_what_is_passed(io_dir, monkeypatch):
    monkeypatch.setenv("SKILLOPT_TEST_SECRET", "do-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-parent-only")
    env = {**MIN_ENV, "ONLY_THIS": "1", "HOME": os.environ["HOME"]}
    res = run_py("import json, os; print(json.dumps(dict(os.environ)))", io_dir, env=env)
    child_env = json.loads(res.stdout)
    child_env.pop("__CF_USER_TEXT_ENCODING", None)  # macOS adds this to every process
    assert child_env == env
    assert "SKILLOPT_TEST_SECRET" not in child_env
    assert "ANTHROPIC_API_KEY" not in child_env


def test_empty_env_reaches_the_child_empty(io_dir, monkeypatch):
    monkeypatch.setenv("SKILLOPT_TEST_SECRET", "do-not-leak")
    res = run_py(
        "import os; print(sorted(k for k in os.environ "
        "if k != '__CF_USER_TEXT_ENCODING' and k != 'LC_CTYPE'))",
        io_dir,
        env={},
    )
    assert res.returncode == 0
    assert res.stdout.strip() == "[]"


def test_large_output_is_captured_fully(io_dir):
    code = (
        "import sys\n"
        "chunk = bytes(range(32, 127)) + b'\\n'\n"
        "for _ in range(50_000): sys.stdout.buffer.write(chunk)\n"  # 4.8 MB
        "sys.stderr.buffer.write(b'e' * 2_000_000)\n"
    )
    res = run_py(code, io_dir)
    assert res.returncode == 0
    chunk = "".join(map(chr, range(32, 127))) + "\n"
    assert len(res.stdout) == 50_000 * len(chunk)
    assert res.stdout == chunk * 50_000
    assert res.stderr == "e" * 2_000_000


def test_duration_is_measured(io_dir):
    res = run_py("import time; time.sleep(0.3)", io_dir)
    assert 0.3 <= res.duration_s < 10


# -- run_process: cannot start -----------------------------------------------------------
def test_missing_program_raises_file_not_found(io_dir, tmp_path):
    with pytest.raises(FileNotFoundError):
        run_process(
            [str(tmp_path / "no-such-program")],
            cwd=tmp_path,
            env={},
            stdin_text="x",
            timeout=5,
            io_dir=io_dir,
        )
    assert live_count() == 0


def test_program_not_on_the_passed_path_raises(io_dir, tmp_path):
    with pytest.raises(OSError):
        run_process(
            ["skillopt-surely-not-a-real-binary"],
            cwd=tmp_path,
            env={"PATH": str(tmp_path)},
            stdin_text="",
            timeout=5,
            io_dir=io_dir,
        )


def test_non_executable_file_raises_os_error(io_dir, tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    with pytest.raises(PermissionError):
        run_process([str(script)], cwd=tmp_path, env={}, stdin_text="", timeout=5, io_dir=io_dir)


def test_missing_cwd_raises_os_error(io_dir, tmp_path):
    with pytest.raises(OSError):
        run_process(
            [PY, "-c", "pass"],
            cwd=tmp_path / "gone",
            env=dict(MIN_ENV),
            stdin_text="",
            timeout=5,
            io_dir=io_dir,
        )


# -- timeouts and process groups ---------------------------------------------------------
# Children sleep a bounded 20 s, so a regression fails the timing asserts instead of
# hanging the suite.
GRANDCHILD = (
    "import subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(20)'])\n"
    "open({pidfile!r}, 'w').write(str(g.pid))\n"
    "time.sleep(20)\n"
)


def test_timeout_kills_the_child_and_its_grandchild(io_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(process, "TERM_GRACE_S", 10.0)  # SIGTERM suffices: no waiting it out
    pidfile = tmp_path / "grandchild.pid"
    res = run_py(GRANDCHILD.format(pidfile=str(pidfile)), io_dir, timeout=1.5)
    assert res.timed_out is True
    assert res.returncode is None
    assert 1.5 <= res.duration_s < 5
    grandchild = int(wait_for_file(pidfile, timeout=0))
    assert wait_dead([grandchild]), f"grandchild {grandchild} survived the timeout"


def test_timeout_escalates_to_sigkill_after_the_grace(io_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(process, "TERM_GRACE_S", 0.5)
    ready, got_term = tmp_path / "ready", tmp_path / "got-term"
    code = (
        "import os, signal, time\n"
        f"signal.signal(signal.SIGTERM, lambda *a: open({str(got_term)!r}, 'w').write('1'))\n"
        f"open({str(ready)!r}, 'w').write(str(os.getpid()))\n"
        "end = time.monotonic() + 20\n"
        "while time.monotonic() < end: time.sleep(0.1)\n"
    )
    res = run_py(code, io_dir, timeout=1.5)
    pid = int(wait_for_file(ready, timeout=0))
    assert res.timed_out is True and res.returncode is None
    assert got_term.is_file(), "SIGTERM is sent before SIGKILL"
    assert 2.0 <= res.duration_s < 5  # timeout + grace, then SIGKILL
    assert not alive(pid)


def test_stragglers_holding_stdout_are_killed_and_do_not_block(io_dir, tmp_path):
    pidfile = tmp_path / "straggler.pid"
    code = (
        "import subprocess, sys\n"
        # the grandchild inherits stdout/stderr and keeps them open for 30 s
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "print('child done', flush=True)\n"
    )
    start = time.monotonic()
    res = run_py(code, io_dir, timeout=20)
    elapsed = time.monotonic() - start
    assert elapsed < 5, f"run_process waited {elapsed:.1f}s for a straggler"
    assert res.timed_out is False
    assert res.returncode == 0
    assert res.stdout == "child done\n"
    straggler = int(pidfile.read_text())
    assert wait_dead([straggler]), f"straggler {straggler} was left running"


# -- kill_all / live_count ---------------------------------------------------------------
def _wait_live(n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while live_count() != n:
        assert time.monotonic() < deadline, f"live_count() never reached {n}"
        time.sleep(0.01)


def test_kill_all_with_nothing_running_returns_zero():
    assert live_count() == 0
    assert kill_all() == 0


def test_kill_all_kills_a_run_in_another_thread(io_dir):
    results: list[ProcessResult] = []
    t = threading.Thread(
        target=lambda: results.append(run_py("import time; time.sleep(20)", io_dir, timeout=30)),
        daemon=True,
    )
    t.start()
    _wait_live(1)
    start = time.monotonic()
    assert kill_all() == 1
    t.join(timeout=5)
    assert not t.is_alive(), "run_process did not return after kill_all"
    assert time.monotonic() - start < 5
    assert live_count() == 0
    (res,) = results
    assert res.timed_out is False  # killed, not timed out
    assert res.returncode is not None and res.returncode < 0  # by a signal
    assert res.duration_s < 10


def test_kill_all_reaches_every_group_and_grandchildren(tmp_path):
    threads, results, pidfiles = [], [], []
    for i in range(2):
        io = tmp_path / f"io{i}"
        io.mkdir()
        pidfile = tmp_path / f"gc{i}.pid"
        pidfiles.append(pidfile)
        code = GRANDCHILD.format(pidfile=str(pidfile))
        t = threading.Thread(
            target=lambda c=code, d=io: results.append(run_py(c, d, timeout=30)), daemon=True
        )
        t.start()
        threads.append(t)
    _wait_live(2)
    grandchildren = [int(wait_for_file(p)) for p in pidfiles]
    assert kill_all() == 2
    for t in threads:
        t.join(timeout=5)
        assert not t.is_alive()
    assert live_count() == 0
    assert len(results) == 2 and all(not r.timed_out for r in results)
    assert wait_dead(grandchildren)


# -- scrubbed_env ------------------------------------------------------------------------
def test_scrubbed_env_keeps_only_named_set_variables():
    environ = {"PATH": "/bin", "HOME": "/h", "SECRET": "s", "OPENAI_API_KEY": "k"}
    assert scrubbed_env(["PATH", "HOME", "NOT_SET"], environ=environ) == {
        "PATH": "/bin",
        "HOME": "/h",
    }


def test_scrubbed_env_deduplicates_and_keeps_order():
    environ = {"A": "1", "B": "2", "C": "3"}
    env = scrubbed_env(["B", "A", "B", "A"], environ=environ)
    assert env == {"B": "2", "A": "1"}
    assert list(env) == ["B", "A"]


def test_scrubbed_env_extra_overrides_and_adds():
    environ = {"PATH": "/bin", "HOME": "/h"}
    env = scrubbed_env(
        ["PATH", "HOME"], environ=environ, extra={"HOME": "/sandbox", "ANTHROPIC_API_KEY": "mine"}
    )
    assert env == {"PATH": "/bin", "HOME": "/sandbox", "ANTHROPIC_API_KEY": "mine"}
    assert environ == {"PATH": "/bin", "HOME": "/h"}  # the source is not modified


def test_scrubbed_env_keeps_empty_values_and_accepts_any_iterable():
    env = scrubbed_env((n for n in ["EMPTY", "X"]), environ={"EMPTY": "", "X": "x"})
    assert env == {"EMPTY": "", "X": "x"}


def test_scrubbed_env_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("SKILLOPT_T_KEEP", "yes")
    monkeypatch.setenv("SKILLOPT_T_DROP", "no")
    monkeypatch.delenv("SKILLOPT_T_UNSET", raising=False)
    env = scrubbed_env(["SKILLOPT_T_KEEP", "SKILLOPT_T_UNSET"])
    assert env == {"SKILLOPT_T_KEEP": "yes"}
    env["SKILLOPT_T_KEEP"] = "changed"
    assert os.environ["SKILLOPT_T_KEEP"] == "yes"  # a copy, not a view


def test_base_env_has_the_basics_and_no_credentials():
    assert {"PATH", "HOME", "LANG", "HTTPS_PROXY", "SSL_CERT_FILE"} <= set(BASE_ENV)
    assert not [n for n in BASE_ENV if "KEY" in n or "TOKEN" in n or "SECRET" in n]
    env = scrubbed_env(
        BASE_ENV, environ={"PATH": "/bin", "GITHUB_TOKEN": "t", "ANTHROPIC_API_KEY": "k"}
    )
    assert env == {"PATH": "/bin"}


def test_scrubbed_env_feeds_run_process(io_dir, monkeypatch):
    monkeypatch.setenv("SKILLOPT_T_SECRET", "leak")
    env = scrubbed_env(["HOME", "SKILLOPT_T_NOT_SET"], extra={**MIN_ENV, "MINE": "1"})
    res = run_py(
        "import os; print(os.environ.get('MINE'), "
        "os.environ.get('SKILLOPT_T_SECRET'), os.environ.get('HOME'))",
        io_dir,
        env=env,
    )
    assert res.stdout.split() == ["1", "None", os.environ["HOME"]]


# -- tail / stderr_tail ------------------------------------------------------------------
def test_tail_short_text_is_stripped_not_clipped():
    assert tail("  hello\n\n") == "hello"
    assert tail("") == ""
    assert tail(" \n\t ") == ""


def test_tail_at_the_limit_has_no_marker():
    assert tail("x" * 10, 10) == "x" * 10


def test_tail_clips_to_the_last_characters_with_a_marker():
    text = "".join(str(i % 10) for i in range(25))  # 0123456789012345678901234
    out = tail(text, 10)
    assert out == "…" + text[-10:]
    assert out == "…5678901234"
    assert len(out) == 11


def test_tail_limit_counts_after_stripping():
    assert tail("\n\n" + "a" * 10 + "   \n", 10) == "a" * 10
    assert tail("  start " + "b" * 20 + "\n", 5) == "…bbbbb"


def test_tail_default_limit_is_800():
    text = "s" + "y" * 900
    assert tail(text) == "…" + "y" * 800


def test_stderr_tail_clips_stderr_only():
    res = ProcessResult(
        returncode=1,
        stdout="o" * 50,
        stderr="head " + "e" * 1000 + "\n",
        timed_out=False,
        duration_s=0.1,
    )
    assert res.stderr_tail() == "…" + "e" * 800
    assert res.stderr_tail(5) == "…eeeee"
    short = ProcessResult(returncode=0, stdout="", stderr=" warn \n", timed_out=False, duration_s=0)
    assert short.stderr_tail() == "warn"


def test_a_process_started_after_cancel_is_killed_at_once(io_dir):
    cancelled = threading.Event()
    cancelled.set()  # what kill_all's caller does first
    start = time.monotonic()
    result = run_process(
        [PY, "-c", "import time; time.sleep(60)"],
        cwd=Path.cwd(),
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=120,
        io_dir=io_dir,
        cancelled=cancelled,
    )
    assert time.monotonic() - start < 10
    assert result.returncode == -9 and not result.timed_out


def test_an_unset_cancel_event_changes_nothing(io_dir):
    result = run_process(
        [PY, "-c", "print('ok')"],
        cwd=Path.cwd(),
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=20,
        io_dir=io_dir,
        cancelled=threading.Event(),
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok"


# -- the PID namespace (the default where available; every test above runs in one) ------
needs_ns = pytest.mark.skipif(
    not process.pid_namespace_available(),
    reason="no PID namespaces here (Linux with util-linux unshare)",
)
VIEW = (
    "import json, os\n"
    "procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
    "init = open('/proc/1/cmdline', 'rb').read().decode('utf-8', 'replace')\n"
    "print(json.dumps({'pid': os.getpid(), 'ppid': os.getppid(), 'procs': procs,"
    " 'init': init}))\n"
)


def _outer_pids(marker: str) -> list[int]:
    """The live processes (seen from here) whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_outer(marker: str, n: int, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(pids := _outer_pids(marker)) < n:
        assert time.monotonic() < deadline, f"never saw {n} processes marked {marker}"
        time.sleep(0.02)
    return pids


@needs_ns
def test_namespaced_child_sees_only_itself_and_its_init(io_dir):
    view = json.loads(run_py(VIEW, io_dir).stdout)
    assert view["ppid"] == 1  # its parent is the namespace's init, not skillopt
    assert "ns_last_pid" in view["init"]
    assert set(view["procs"]) == {1, view["pid"]}  # nothing of ours, nothing else


def test_without_the_namespace_the_child_sees_us(io_dir):
    res = run_process(
        [PY, "-c", VIEW],
        cwd=Path.cwd(),
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=20,
        io_dir=io_dir,
        pid_namespace=False,
    )
    view = json.loads(res.stdout)
    assert view["ppid"] == os.getpid()
    assert os.getpid() in view["procs"]


@needs_ns
def test_namespaced_agents_running_at_once_get_distinct_pids(tmp_path):
    pids: list[int] = []

    def one(i: int) -> None:
        io = tmp_path / f"io{i}"
        io.mkdir()
        pids.append(int(run_py("import os, time; time.sleep(0.3); print(os.getpid())", io).stdout))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(set(pids)) == 3  # they share /tmp: a pid used in a file name must not clash


@pytest.mark.parametrize("namespace", [True, False])
def test_death_by_signal_is_a_negative_returncode(io_dir, namespace):
    res = run_process(
        [PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"],
        cwd=Path.cwd(),
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=20,
        io_dir=io_dir,
        pid_namespace=namespace,
    )
    assert res.returncode == -10 and not res.timed_out


@pytest.mark.parametrize("namespace", [True, False])
def test_files_the_child_writes_are_ours(io_dir, tmp_path, namespace):
    run_process(
        [PY, "-c", "open('made.txt', 'w').write('x')"],
        cwd=tmp_path,
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=20,
        io_dir=io_dir,
        pid_namespace=namespace,
    )
    assert (tmp_path / "made.txt").stat().st_uid == os.getuid()


# the child's argv holds the marker; only the grandchild's holds marker + "-gc"
SPAWN = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)',"
    " sys.argv[1] + '-gc'])\n"
)


@needs_ns
def test_namespaced_timeout_kills_the_real_processes(io_dir):
    # pids the child reports are its namespace's: find the processes from out here
    marker = f"skillopt-test-timeout-{os.getpid()}-{time.monotonic_ns()}"
    results: list[ProcessResult] = []
    t = threading.Thread(
        target=lambda: results.append(
            run_process(
                [PY, "-c", SPAWN + "time.sleep(30)\n", marker],
                cwd=Path.cwd(),
                env=dict(MIN_ENV),
                stdin_text="",
                timeout=1.5,
                io_dir=io_dir,
            )
        ),
        daemon=True,
    )
    t.start()
    _wait_outer(marker + "-gc", 1)
    outer = _outer_pids(marker)  # the wrapper, the init, the child and the grandchild
    assert len(outer) >= 3
    t.join(timeout=10)
    assert not t.is_alive()
    assert results[0].timed_out and results[0].returncode is None
    assert wait_dead(outer), f"{outer} survived the timeout"
    assert _outer_pids(marker) == []


@needs_ns
def test_namespaced_stragglers_and_kill_all_reach_the_real_processes(tmp_path):
    marker = f"skillopt-test-straggler-{os.getpid()}-{time.monotonic_ns()}"
    io = tmp_path / "io-a"
    io.mkdir()
    start = time.monotonic()
    res = run_process(
        [PY, "-c", SPAWN + "print('child done', flush=True)\n", marker],
        cwd=Path.cwd(),
        env=dict(MIN_ENV),
        stdin_text="",
        timeout=20,
        io_dir=io,
    )
    assert time.monotonic() - start < 5
    assert res.returncode == 0 and res.stdout == "child done\n"
    assert wait_dead(_outer_pids(marker))

    marker += "-kill"
    io = tmp_path / "io-b"
    io.mkdir()
    results: list[ProcessResult] = []
    t = threading.Thread(
        target=lambda: results.append(
            run_process(
                [PY, "-c", SPAWN + "time.sleep(30)\n", marker],
                cwd=Path.cwd(),
                env=dict(MIN_ENV),
                stdin_text="",
                timeout=60,
                io_dir=io,
            )
        ),
        daemon=True,
    )
    t.start()
    _wait_outer(marker + "-gc", 1)
    outer = _outer_pids(marker)
    assert kill_all() == 1
    t.join(timeout=10)
    assert not t.is_alive()
    assert results[0].returncode is not None and results[0].returncode < 0
    assert wait_dead(outer), f"{outer} survived kill_all"
    assert _outer_pids(marker) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only")
def test_running_a_child_makes_us_non_dumpable(io_dir):
    run_py("pass", io_dir)
    assert dumpable.make_non_dumpable() is True
    import ctypes

    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE
