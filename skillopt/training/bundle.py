"""Bundles that carry a finished run to another machine (`skillopt bundle`).

`bundle(RUN, OUT)` packs what a replay needs into one `.tar.gz`: the run directory,
the run's audit history (a bare repository holding only its refs), the suite it
was trained on with the files it references, and exactly the store rows it used
(rollouts, skill texts and optimizer replies, from the store's `uses` table).
`replay(OUT)` works from it anywhere, with no key and no model.

Invariants:
- The suite travels with the code it names (a python scorer's module and the
  modules beside it, the files a command verifier names under the suite's
  directory), listed in the manifest's `code`: a replay runs none of it unless
  told to trust it (`--trust-code`).
- A bundle is written only when it replays: the packed recording is replayed
  offline (loading no code) before the archive is written, and a run whose
  recording is missing something (no rows at all, a step's rollout or reply, the
  audit branch or its initial commit) is one `InputError` naming the first missing
  piece, with nothing written.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillopt.errors import InputError
from skillopt.runs.read import find_run
from skillopt.store.audit import Audit
from skillopt.training.recording import copy_rows, finished_state, recording_in, store_path
from skillopt.training.unpack import MANIFEST, tree_bytes

BUNDLE_VERSION = 1
DATA_SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")  # beside the suite: its items, its data
SUITE_DIR_VARS = ("$SKILLOPT_SUITE_DIR/", "${SKILLOPT_SUITE_DIR}/")  # how a verifier names it


def bundle(ref: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> Path:
    """Pack run `ref` into `out` (a .tar.gz): run dir, audit refs, suite and the code
    it names, store rows. Refuses (`InputError`) a run it cannot make replayable."""
    from skillopt.training.replay import replay_recording

    run = find_run(ref, run_dir)
    config = run.config()
    finished_state(run)
    store = store_path(config)
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="skillopt-bundle-") as tmp:
        root = Path(tmp) / "bundle"
        root.mkdir()
        shutil.copytree(
            run.path, root / "runs" / run.run_id, ignore=shutil.ignore_patterns("workspaces")
        )
        _copy_audit(config, run.run_id, root / "audit.git")
        suite_name, code = _copy_suite(Path(config["suite"]), root / "suite")
        counts = copy_rows(store, run.run_id, root / "store.sqlite")
        if not counts["rollouts"] and not counts["replies"]:
            raise InputError(
                f"the store holds no recorded call of run {run.run_id} (was the store "
                "deleted or replaced since the run?), so nothing could replay it",
                path=store,
            )
        manifest = {
            "version": BUNDLE_VERSION,
            "run_id": run.run_id,
            "suite": suite_name,
            "skill_path": config["audit"]["skill_path"],
            "rows": counts,
            "code": code,  # packed files a replay runs only with --trust-code
            # what it unpacks to: a replay refuses to write more (`training/unpack`)
            "bytes": tree_bytes(root) + 4096,  # + the manifest itself
        }
        (root / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        # replayed from a copy of the packed store (closed, so whole in its one file):
        # the replay's own ledger stays out of the bundle
        check = Path(tmp) / "check.sqlite"
        shutil.copy2(root / "store.sqlite", check)
        res = replay_recording(recording_in(root, out), store=check)
        if res.verdict == "incomplete":
            raise InputError(
                f"run {run.run_id} cannot be bundled: its recording is incomplete "
                f"({res.first_difference})",
                path=store,
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:gz") as tar:
            tar.add(root, arcname="bundle")
    return out


def _copy_audit(config: Mapping[str, Any], run_id: str, dest: Path) -> None:
    """A bare repository holding only the run's refs and what they reach."""
    audit = config["audit"]
    Audit.open(audit["repo"], run_id, audit["skill_path"]).copy_run(dest)


def _copy_suite(suite: Path, dest: Path) -> tuple[str, list[str]]:
    """The suite file, the data files beside it (its .jsonl items) and the code it
    names; its file name and the code files, as paths in the bundle. A suite whose
    items come from a task source (a CSV given as the suite, `items: data.csv`, a
    saved dataset, `hf:…`) is packed with its items written in: the replay needs
    neither the source nor the library that reads it."""
    from skillopt.suite.sourced import inlined
    from skillopt.suite.sources.records import dump

    written = inlined(suite)
    if written is None and not suite.is_file():
        raise InputError("the run's task suite is gone", path=suite)
    dest.mkdir(parents=True)
    if written is not None:
        name = f"{written['name'] if suite.is_dir() or not suite.exists() else suite.stem}.yaml"
        (dest / name).write_text(dump(written), encoding="utf-8")
    else:
        name = suite.name
        for sibling in suite.parent.iterdir():
            if sibling.is_file() and (sibling == suite or sibling.suffix in DATA_SUFFIXES):
                shutil.copy2(sibling, dest / sibling.name)
    code = sorted(suite_code(suite))
    if suite.is_file() and (triggers := _trigger_file(suite)) is not None:
        (dest / triggers).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(suite.parent / triggers, dest / triggers)  # `triggers:` below the folder
    for rel in code:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(suite.parent / rel, dest / rel)
    return name, [f"suite/{rel}" for rel in code]


def _trigger_file(suite: Path) -> Path | None:
    """The trigger suite a task suite names (`triggers:`), relative to its folder."""
    from skillopt.suite.loader import load_suite

    named = load_suite(suite, run_code=False).trigger_suite
    return None if named is None else named.path.resolve().relative_to(suite.parent.resolve())


def suite_code(suite: Path) -> set[str]:
    """The files under the suite's directory that its scorers run (paths relative to
    it), found without running any: a python scorer's module (a package whole) and
    the modules beside the suite, which it may import; a command verifier's words
    that name a file or directory there (`verify.sh`, `$SKILLOPT_SUITE_DIR/check.py`)."""
    from skillopt.suite.loader import load_suite
    from skillopt.suite.scorers.base import Unloaded
    from skillopt.suite.scorers.code import CommandParams, PythonParams

    base = suite.parent.resolve()
    found: set[Path] = set()
    loaded = load_suite(suite, run_code=False)
    unloaded = {id(t.scorer): t.scorer for t in loaded.tasks if isinstance(t.scorer, Unloaded)}
    for scorer in unloaded.values():
        params = scorer.params
        if isinstance(params, PythonParams):
            module = params.function.partition(":")[0].split(".")
            found.update(p for p in base.glob("*.py"))  # siblings it may import
            found.add(base.joinpath(*module).with_suffix(".py"))
            package = base.joinpath(*module[:1])
            if package.is_dir():
                found.update(package.rglob("*.py"))
        elif isinstance(params, CommandParams):
            found.update(base / word for word in _command_words(params.run))
    inside: set[str] = set()
    for path in found:
        if path.resolve() == base:  # `.` or the variable alone: not a file it names
            continue
        for file in path.rglob("*") if path.is_dir() else [path]:
            real = file.resolve()
            if file.is_file() and real.is_relative_to(base) and "__pycache__" not in real.parts:
                inside.add(real.relative_to(base).as_posix())
    return inside


def _command_words(run: str) -> list[str]:
    """The words of a verifier's command line that may name a file beside the suite."""
    try:
        words = shlex.split(run)
    except ValueError:  # unbalanced quotes: the shell will say so; take what is there
        words = run.split()
    out = []
    for word in words:
        for var in SUITE_DIR_VARS:
            if var in word:
                word = word.split(var, 1)[1]
        if word and not word.startswith(("-", "/", "$")):
            out.append(word)
    return out
