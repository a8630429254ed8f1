"""skillopt.harness.dumpable and the namespace's init program: skillopt is closed to
the agents it runs only while they may run, and the program at pid 1 of their
namespace names nothing of skillopt."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from skillopt.harness import namespace, process

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only")
needs_ns = pytest.mark.skipif(
    not process.pid_namespace_available(),
    reason="no PID namespaces here (Linux with util-linux unshare)",
)

# A host program (a notebook, say) that runs one agent through skillopt and reports
# its own dumpable flag before, during and after the run (PR_GET_DUMPABLE).
HOST = r"""
import ctypes, json, sys, threading, time
from pathlib import Path
from skillopt.harness import dumpable, process

io, ns, first = Path(sys.argv[1]), sys.argv[2] == "ns", sys.argv[3]
flag = lambda: ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
if first == "for-good":
    dumpable.make_non_dumpable()
seen = {"before": flag()}
started = io / "started"
code = f"open({str(started)!r}, 'w').close(); import time; time.sleep(1.5)"
run = threading.Thread(target=lambda: process.run_process(
    [sys.executable, "-c", code], cwd=io, env={}, stdin_text="", timeout=30, io_dir=io,
    pid_namespace=ns))
run.start()
deadline = time.monotonic() + 20
while not started.exists() and time.monotonic() < deadline:
    time.sleep(0.01)
seen["during"] = flag()
run.join()
seen["after"] = flag()
print(json.dumps(seen))
"""


def host(tmp_path, ns: bool, first: str = "-") -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", HOST, str(tmp_path), "ns" if ns else "plain", first],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, int] = json.loads(done.stdout)
    return seen


@linux
@needs_ns
def test_a_run_leaves_the_hosts_dumpable_flag_as_it_was(tmp_path):
    assert host(tmp_path, ns=True) == {"before": 1, "during": 0, "after": 1}


@linux
def test_after_a_run_outside_a_namespace_the_flag_stays_off(tmp_path):
    # something the agent started may have left its group and still be alive
    assert host(tmp_path, ns=False) == {"before": 1, "during": 0, "after": 0}


@linux
@needs_ns
def test_a_host_that_made_itself_non_dumpable_stays_so(tmp_path):
    assert host(tmp_path, ns=True, first="for-good") == {"before": 0, "during": 0, "after": 0}


def test_the_init_program_is_plain_python_that_names_nothing_of_skillopt():
    source = namespace.init_program()
    compile(source, "ns_init", "exec")
    assert "skillopt" not in source.lower()  # the agent reads its command line
    assert "ns_last_pid" in source  # what the probe recognises it by
