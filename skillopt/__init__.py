"""skillopt: train agent skill documents against scored tasks.

The library is complete on its own (`skillopt.api`); the `skillopt` command is a
thin shell over it.
"""

__version__ = "0.1.0"
