"""The events a training run hands its observers (`train(observers=[...])`), one
frozen class per kind, for an observer that switches on their type (`match ev:
case Stage(): ...`), as the command line's live view does.

Invariant: importing this loads the event records alone (`skillopt.training.events`,
which imports no engine), so an observer imports it when its run begins; the
facade itself (`import skillopt.api`) still loads none of it.
"""

from __future__ import annotations

from skillopt.training.events import (
    Decided,
    EpochEnd,
    Finished,
    GateDecision,
    InitialDecision,
    NoCandidate,
    ProposalMade,
    RolloutDone,
    RunStarted,
    Stage,
    Stopped,
    TrainEvent,
    TrainObserver,
)

__all__ = [
    "Decided",
    "EpochEnd",
    "Finished",
    "GateDecision",
    "InitialDecision",
    "NoCandidate",
    "ProposalMade",
    "RolloutDone",
    "RunStarted",
    "Stage",
    "Stopped",
    "TrainEvent",
    "TrainObserver",
]
