"""How the embedded model runs on this machine: llama.cpp's thread count from the
cores the process may use, OpenMP's waiting threads asleep, and one line when the
build is one CPU's own (AVX-512, AMX), whose answers differ from the portable
build's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import have_local

from skillopt.models import local_llama

ROOT = Path(__file__).resolve().parents[2]
# CPU affinity and cgroups are Linux's
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux only")

# llama_print_system_info() of llama-cpp-python 0.3.x as each build prints it: pip's
# default (native) build on an Intel CPU with AMX, and the portable build
# (CMAKE_ARGS="-DGGML_NATIVE=OFF") on the same machine
NATIVE_AMX = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
PORTABLE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter importing this checkout's skillopt."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
    )


def test_threads_never_outnumber_the_cores_the_process_may_use():
    """A process pinned to one core (its affinity, as `taskset` or a container
    sets it) runs llama.cpp on one thread, whatever the machine has."""
    done = run_python(
        """
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        from skillopt.models import local_llama
        print(local_llama.usable_cores(), local_llama.default_threads())
        """
    )
    assert done.stdout.split() == ["1", "1"]


def test_a_cgroup_quota_and_omp_num_threads_lower_the_count(tmp_path, monkeypatch):
    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(local_llama, "_CGROUP_CPU_MAX", cpu_max)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    affinity = len(os.sched_getaffinity(0))
    cpu_max.write_text("max 100000\n")
    assert local_llama.usable_cores() == affinity
    assert local_llama.default_threads() == min(local_llama.MAX_THREADS, affinity)
    cpu_max.write_text("50000 100000\n")  # half a CPU: one thread, never zero
    assert local_llama.usable_cores() == 1 and local_llama.default_threads() == 1
    cpu_max.write_text("garbage\n")
    assert local_llama.usable_cores() == affinity
    cpu_max.unlink()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as Ray sets it for a one-CPU worker
    assert local_llama.default_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "0")  # not a count: ignored
    assert local_llama.default_threads() == min(local_llama.MAX_THREADS, affinity)


@pytest.mark.skipif(not have_local(), reason='needs pip install -e ".[local]"')
@pytest.mark.parametrize("user", [None, "active"])
def test_openmp_threads_sleep_while_they_wait_and_children_do_not_inherit_it(user):
    """libgomp reads OMP_WAIT_POLICY once, when llama.cpp loads it; with
    OMP_DISPLAY_ENV=verbose it prints what it read. The user's own setting wins, and the
    environment the process hands its subprocesses is left as it was."""
    env = {"OMP_DISPLAY_ENV": "verbose"}
    if user:
        env["OMP_WAIT_POLICY"] = user
    else:
        env = {**env, "OMP_WAIT_POLICY": ""}
    done = run_python(
        """
        import os
        if os.environ.get("OMP_WAIT_POLICY") == "":
            del os.environ["OMP_WAIT_POLICY"]
        from skillopt.models import local_llama
        local_llama._llama_cpp()
        print(os.environ.get("OMP_WAIT_POLICY"))
        """,
        **env,
    )
    if "OPENMP = 1" not in local_llama._system_info():
        pytest.skip("this llama.cpp is built without OpenMP")
    if user:
        assert "OMP_WAIT_POLICY = 'ACTIVE'" in done.stderr
    else:  # libgomp's own default also shows as PASSIVE, but spins 300000 times first
        assert "OMP_WAIT_POLICY = 'PASSIVE'" in done.stderr
        assert "GOMP_SPINCOUNT = '0'" in done.stderr
    assert done.stdout.strip() == str(user)


def test_a_build_for_this_cpu_says_so_once_with_the_fix(monkeypatch, caplog):
    monkeypatch.setattr(local_llama, "_warned", set())
    monkeypatch.setattr(local_llama, "_system_info", lambda: PORTABLE)
    with caplog.at_level(logging.WARNING, logger="skillopt"):
        local_llama._say_if_native()
    assert caplog.records == []
    monkeypatch.setattr(local_llama, "_system_info", lambda: NATIVE_AMX)
    with caplog.at_level(logging.WARNING, logger="skillopt"):
        local_llama._say_if_native()
        local_llama._say_if_native()
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert "built for this CPU (AMX_INT8, AVX512, AVX512_BF16, AVX512_VBMI, AVX512_VNNI)" in line
    assert "answers can differ from other machines'" in line
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall' in line
    assert local_llama.native_kernels(PORTABLE) == []
