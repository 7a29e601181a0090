"""aioflow's own version, where the framework can read it (its messages name it) without
importing the package face."""

__version__ = "0.1.0"
