"""An LLM optimizer whose calls go out with no key at all (a model passed in code,
which no up-front check sees) stops the run at its first call as an auth failure:
litellm raises it as a server error, which used to be retried and then let every
step end with "the optimizer proposed no edit" and exit 0."""

from __future__ import annotations

import time

import pytest
from train.world import flags

from skillopt import api
from skillopt.errors import SystemicFailure
from skillopt.models.litellm_model import LiteLLMModel
from skillopt.optimize.reflect import LLMOptimizer


def test_an_optimizer_without_a_key_stops_the_run_unretried(world, models, monkeypatch):
    """The target is scripted (`models`); the optimizer is litellm with no key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def no_waiting(seconds):
        raise AssertionError(f"retried after {seconds:.1f}s")

    monkeypatch.setattr(time, "sleep", no_waiting)
    keyless = LiteLLMModel("openai/gpt-4o-mini", retries=4)

    with pytest.raises(SystemicFailure, match=r"cannot be used \(auth\).*Missing credentials"):
        api.train(world["skill"], world["suite"], **flags(optimizer=LLMOptimizer(keyless)))
