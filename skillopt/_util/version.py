"""skillopt's version, in a leaf every layer may read (`skillopt.__version__` is this,
loaded when first asked for, like every other name of the package)."""

__version__ = "0.1.0"
