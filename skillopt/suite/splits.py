"""Splitting a suite's items into train, val and test.

Invariant: splits are assigned by the rank of a seeded hash of each item's id, never
by position: the sizes match the fractions exactly, and adding or removing an item
moves at most one other item across each boundary between splits. An item may pin
its split with `split:`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SplitSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    train: float = Field(0.4, ge=0, le=1)
    val: float = Field(0.3, ge=0, le=1)
    test: float = Field(0.3, ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitSpec:
        total = self.train + self.val + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + val + test must be 1, got {total:g}")
        return self


def split_sizes(n: int, spec: SplitSpec) -> dict[str, int]:
    """How many of `n` items each split gets: the fractions' cumulative shares
    rounded down (45 items at 0.4/0.3/0.3: 18 / 31 -> 18, 13, 14)."""
    train = math.floor(spec.train * n + 1e-9)
    train_val = max(train, min(n, math.floor((spec.train + spec.val) * n + 1e-9)))
    return {"train": train, "val": train_val - train, "test": n - train_val}


def assign_splits(
    ids: Sequence[str], spec: SplitSpec, pinned: Sequence[str | None] | None = None
) -> list[str]:
    """The split of each item of `ids`, in order: the sizes match the fractions
    exactly (`split_sizes` of the whole suite), and the items are ranked by a
    seeded sha256 of their id, the lowest to train, then val, then test.

    An item's split depends on its rank, not its position, so reordering or
    editing items moves none, and adding or removing one item moves at most one
    existing item across each boundary between splits (the rank of everything
    after it shifts by one while each boundary moves by at most one). Pinned items
    (`pinned[i]` not None) keep their split and count toward its size; when they
    overfill a split, the others are shared out in proportion to what each split
    still needs."""
    pins = list(pinned) if pinned is not None else [None] * len(ids)
    prefix = f"{spec.seed}\0".encode()
    free = [i for i, pin in enumerate(pins) if pin is None]
    target = split_sizes(len(ids), spec)
    for pin in pins:
        if pin is not None:
            target[pin] -= 1
    need = {name: max(0, size) for name, size in target.items()}
    if sum(need.values()) != len(free):  # pins overfilled a split
        total = sum(need.values()) or 1
        weights = SplitSpec.model_construct(
            seed=spec.seed,
            train=need["train"] / total,
            val=need["val"] / total,
            test=need["test"] / total,
        )
        need = split_sizes(len(free), weights)
    sha256 = hashlib.sha256
    ranked = sorted(free, key=lambda i: (sha256(prefix + ids[i].encode()).digest(), ids[i]))
    out = [pin or "" for pin in pins]
    edges = (need["train"], need["train"] + need["val"])
    for rank, i in enumerate(ranked):
        out[i] = "train" if rank < edges[0] else "val" if rank < edges[1] else "test"
    return out
