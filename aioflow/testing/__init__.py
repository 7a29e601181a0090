"""Testing aioflow programs: graph and value assertions, and a pytest plugin (registered
through the `pytest11` entry point, so installing aioflow enables it) with the `af_graph`
and `af_session` fixtures and shuffled schedules (`--aioflow-shuffle-schedules=N`).
See docs/testing.md."""

from aioflow.testing.graph_assertions import assert_graph_equal, graph_diff
from aioflow.testing.tolerances import assert_near, default_tolerance

__all__ = ["assert_graph_equal", "assert_near", "default_tolerance", "graph_diff"]
