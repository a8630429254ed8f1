from train.world import models, world  # noqa: F401  (fixtures for the training tests)
