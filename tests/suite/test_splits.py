"""Split assignment: a seeded hash of each item's id, never its position."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import write_suite

from skillopt.errors import InputError
from skillopt.suite import load_suite, require_split
from skillopt.suite.loader import SplitSpec, assign_split


def write_items(path: Path, ids: list[str]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": i, "input": f"q {i}", "expected": "x"}) + "\n" for i in ids),
        encoding="utf-8",
    )
    return path


def suite_with(tmp_path: Path, ids: list[str], name: str = "s", **split) -> Path:
    write_items(tmp_path / f"{name}.jsonl", ids)
    fields = {"items": f"{name}.jsonl"}
    if split:
        fields["split"] = split
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(fields), encoding="utf-8")  # JSON is YAML
    return path


def splits_of(path: Path) -> dict[str, str]:
    return {t.id: t.split for t in load_suite(path).tasks}


IDS = [f"item-{n:04d}" for n in range(2000)]


def test_default_fractions_on_2000_items():
    counts = Counter(assign_split(i, SplitSpec()) for i in IDS)
    assert set(counts) == {"train", "val", "test"}
    # binomial sd is about 1% of n here; 3.5% is > 3 sd
    assert abs(counts["train"] / 2000 - 0.4) < 0.035
    assert abs(counts["val"] / 2000 - 0.3) < 0.035
    assert abs(counts["test"] / 2000 - 0.3) < 0.035


def test_custom_fractions_through_the_loader(tmp_path):
    path = suite_with(tmp_path, IDS, seed=7, train=0.7, val=0.2, test=0.1)
    counts = load_suite(path).counts()
    assert sum(counts.values()) == 2000
    assert abs(counts["train"] / 2000 - 0.7) < 0.035
    assert abs(counts["val"] / 2000 - 0.2) < 0.035
    assert abs(counts["test"] / 2000 - 0.1) < 0.035


def test_a_zero_fraction_gets_no_items(tmp_path):
    path = suite_with(tmp_path, IDS[:300], train=0.5, val=0.5, test=0.0)
    suite = load_suite(path)
    assert suite.counts()["test"] == 0
    assert suite.counts()["train"] > 100 and suite.counts()["val"] > 100
    with pytest.raises(InputError) as info:
        require_split(suite, "test")
    assert "test=0" in str(info.value)


def test_all_train(tmp_path):
    path = suite_with(tmp_path, IDS[:200], train=1, val=0, test=0)
    assert set(splits_of(path).values()) == {"train"}


def test_deterministic_across_loads(tmp_path):
    path = suite_with(tmp_path, IDS[:500], seed=3)
    first = splits_of(path)
    assert first == splits_of(path)
    assert len(set(first.values())) == 3


def test_deterministic_across_processes_and_hash_seeds():
    # sha256, not Python's per-process salted hash()
    code = (
        "import json; from skillopt.suite.loader import SplitSpec, assign_split; "
        f"print(json.dumps([assign_split(i, SplitSpec(seed=5)) for i in {IDS[:200]!r}]))"
    )
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        outs.append(json.loads(proc.stdout))
    here = [assign_split(i, SplitSpec(seed=5)) for i in IDS[:200]]
    assert outs[0] == outs[1] == here


def test_depends_on_the_seed(tmp_path):
    a = [assign_split(i, SplitSpec(seed=0)) for i in IDS[:1000]]
    b = [assign_split(i, SplitSpec(seed=1)) for i in IDS[:1000]]
    changed = sum(x != y for x, y in zip(a, b))
    # independent draws disagree about 66% of the time with 0.4/0.3/0.3
    assert changed > 400
    # and the seed in the suite file is what the loader uses
    s0 = splits_of(suite_with(tmp_path, IDS[:300], name="s0", seed=0))
    s1 = splits_of(suite_with(tmp_path, IDS[:300], name="s1", seed=1))
    assert s0 == {i: assign_split(i, SplitSpec(seed=0)) for i in IDS[:300]}
    assert s1 == {i: assign_split(i, SplitSpec(seed=1)) for i in IDS[:300]}
    assert s0 != s1


def test_stable_under_insertion(tmp_path):
    base = IDS[:500]
    before = splits_of(suite_with(tmp_path, base, name="before", seed=11))
    grown = list(base)
    for k in range(50):  # new items scattered through the file, not appended
        grown.insert(k * 11, f"new-{k}")
    after = splits_of(suite_with(tmp_path, grown, name="after", seed=11))
    assert len(after) == 550
    assert {i: after[i] for i in base} == before
    # the newcomers are spread over the splits, not all dumped in one
    assert len({after[f"new-{k}"] for k in range(50)}) == 3


def test_stable_under_removal_and_reordering(tmp_path):
    base = IDS[:500]
    before = splits_of(suite_with(tmp_path, base, name="before"))
    kept = [i for n, i in enumerate(base) if n % 3 != 0]
    after = splits_of(suite_with(tmp_path, kept, name="after"))
    assert after == {i: before[i] for i in kept}
    reordered = splits_of(suite_with(tmp_path, list(reversed(base)), name="reversed"))
    assert reordered == before


def test_stable_when_other_items_are_edited(tmp_path):
    items = [{"id": i, "input": "q", "expected": "x"} for i in IDS[:200]]
    before = splits_of(write_suite(tmp_path / "a.yaml", items))
    edited = [dict(it, input="changed", expected="y") for it in items]
    assert splits_of(write_suite(tmp_path / "b.yaml", edited)) == before


def test_a_split_pin_wins(tmp_path):
    spec = SplitSpec()
    train_ids = [i for i in IDS[:100] if assign_split(i, spec) == "train"]
    test_ids = [i for i in IDS[:100] if assign_split(i, spec) == "test"]
    pinned_to_test, pinned_to_val = train_ids[0], test_ids[0]
    items = [{"id": i, "input": "q", "expected": "x"} for i in IDS[:100]]
    for it in items:
        if it["id"] == pinned_to_test:
            it["split"] = "test"
        if it["id"] == pinned_to_val:
            it["split"] = "val"
    got = splits_of(write_suite(tmp_path / "s.yaml", items))
    assert got[pinned_to_test] == "test"
    assert got[pinned_to_val] == "val"
    others = {i: s for i, s in got.items() if i not in (pinned_to_test, pinned_to_val)}
    assert others == {i: assign_split(i, spec) for i in others}


def test_integer_ids_split_like_their_string_form(tmp_path):
    items = [{"id": n, "input": "q", "expected": "x"} for n in range(100)]
    got = splits_of(write_suite(tmp_path / "s.yaml", items))
    assert got == {str(n): assign_split(str(n), SplitSpec()) for n in range(100)}


@pytest.mark.parametrize(
    "split",
    [
        {"train": 0.5, "val": 0.3, "test": 0.3},
        {"train": 0.6, "val": 0.3},  # test keeps its default 0.3: 1.2
        {"train": 0.2, "val": 0.2, "test": 0.2},
    ],
)
def test_fractions_that_do_not_sum_to_one(tmp_path, split):
    path = suite_with(tmp_path, IDS[:10], **split)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.field == "split"
    assert "field 'split'" in str(info.value)
    assert "must be 1" in str(info.value)
    assert str(path) in str(info.value)


def test_negative_or_oversized_fraction(tmp_path):
    path = suite_with(tmp_path, IDS[:10], train=1.5, val=-0.25, test=-0.25)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.field.startswith("split.")


def test_unknown_split_setting(tmp_path):
    path = suite_with(tmp_path, IDS[:10], train=0.5, val=0.25, test=0.25, dev=0.1)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.field == "split.dev"
    assert "unknown field" in str(info.value)
