"""Does the embedded model answer the same on this CPU as on another? (needs the
`local` extra)

Prints what decides the answers besides the prompt — the llama.cpp build's system
info, the CPU (its brand string and the instruction sets it reports, read with
the CPUID instruction itself, so that under an emulator such as `qemu-x86_64
-cpu Haswell-v4` they are the emulated CPU's, where /proc/cpuinfo would still
be the host's) — then every answer of a fixed batch (the product-codes suite's
test tasks, first `--tasks` of them, with the bundled skill plus the first 8
training tasks as worked examples, the shape training gives it) and one digest of
them all. Two machines whose digests are equal gave byte-identical answers.

Run: python benchmarks/local_portability_benchmark.py [--tasks N]
     qemu-x86_64 -cpu Haswell-v4 "$(command -v python)" benchmarks/local_portability_benchmark.py --tasks 10
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import mmap
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt.harness.chat import ChatHarness  # noqa: E402
from skillopt.models import local, local_prompt  # noqa: E402
from skillopt.skill.document import Skill  # noqa: E402
from skillopt.suite.loader import load_suite  # noqa: E402

# void cpuid(uint32_t leaf, uint32_t out[4]) for x86-64 System V: eax=leaf, ecx=0
# push rbx; mov eax, edi; xor ecx, ecx; cpuid; mov [rsi..rsi+12], eax ebx ecx edx;
# pop rbx; ret
_CPUID_CODE = bytes.fromhex("5389f831c90fa28906895e04894e0889560c5bc3")
_PAGES: list[mmap.mmap] = []  # the code's pages, mapped as long as the process lives


def cpuid_reader() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """A callable running CPUID (None off x86-64): the CPU as the process sees it."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_CPUID_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    _PAGES.append(page)
    return ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(address)


def cpu() -> tuple[str, list[str]]:
    """(brand string, the vector instruction sets of note) from CPUID."""
    fn = cpuid_reader()
    if fn is None:
        return platform.processor() or platform.machine(), []
    out = (ctypes.c_uint32 * 4)()

    def regs(leaf: int) -> tuple[int, int, int, int]:
        fn(leaf, out)
        return out[0], out[1], out[2], out[3]

    brand = b""
    if regs(0x80000000)[0] >= 0x80000004:
        for leaf in (0x80000002, 0x80000003, 0x80000004):
            brand += b"".join(r.to_bytes(4, "little") for r in regs(leaf))
    _, _, ecx1, _ = regs(1)
    _, ebx7, _, edx7 = regs(7) if regs(0)[0] >= 7 else (0, 0, 0, 0)
    bits = {
        "FMA": ecx1 >> 12,
        "F16C": ecx1 >> 29,
        "AVX": ecx1 >> 28,
        "AVX2": ebx7 >> 5,
        "AVX512F": ebx7 >> 16,
        "AVX512BW": ebx7 >> 30,
        "AMX-TILE": edx7 >> 24,
    }
    flags = [name for name, value in bits.items() if value & 1]
    return brand.rstrip(b"\0").decode("ascii", "replace").strip(), flags


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=None, help="first N tasks (default all)")
    args = parser.parse_args(argv)

    import llama_cpp

    brand, flags = cpu()
    print(f"cpu: {brand} ({' '.join(flags) or 'no AVX'})")
    print(f"llama-cpp-python {llama_cpp.__version__}")
    print(f"system info: {llama_cpp.llama_print_system_info().decode().strip()}")
    suite = load_suite(ROOT / "tasks" / "product-codes.yaml")
    skill = Skill.load(ROOT / "skills" / "product-codes")
    examples = "\n\n".join(
        local_prompt.format_example(t.prompt, str(t.expected)) for t in suite.split("train")[:8]
    )
    skill = skill.with_body(skill.body + "\n## Examples\n\n" + examples + "\n")
    model = local.LocalModel()
    harness = ChatHarness(model)
    tasks = suite.split("test")[: args.tasks] if args.tasks else suite.split("test")
    digest = hashlib.sha256()
    start = time.perf_counter()
    for task in tasks:
        answer = model.complete(harness.messages(skill, task)).text
        digest.update(f"{task.id}\0{answer}\0".encode())
        print(f"  {task.id}  {answer}")
    seconds = time.perf_counter() - start
    print(f"{len(tasks)} answers in {seconds:.1f} s, digest {digest.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
