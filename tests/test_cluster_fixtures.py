"""The acceptance programs of issue 27 in one process: each program of
tests/data/make_cluster_fixtures_tf.py runs unchanged on aioflow.compat.v1 over
in-process servers (protocol "in_process": no sockets) and must answer what TF 2.21's
own cluster answered (tests/data/cluster_tf.json): values, placements, error classes."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from aioflow.compat import v1 as tf

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_cluster_fixtures_tf as programs  # noqa: E402

EXPECTED = json.loads((DATA / "cluster_tf.json").read_text())
_PORTS = itertools.count(41000)


class InProcessCluster:
    """aioflow servers of this process, one per task, reached without sockets."""

    def __init__(self, jobs: dict):
        self.spec = tf.train.ClusterSpec(
            {job: [f"localhost:{next(_PORTS)}" for _ in range(n)] for job, n in jobs.items()})
        self.servers = {(job, i): tf.train.Server(self.spec, job_name=job, task_index=i,
                                                  protocol="in_process")
                        for job, n in jobs.items() for i in range(n)}

    def target(self, job: str, task: int) -> str:
        return self.servers[(job, task)].target

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


def _close(actual, expected, path="") -> None:
    """`actual` equals `expected` (floats to float32 precision), naming where not."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (path, actual)
        for key in expected:
            _close(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (path, actual)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _close(a, e, f"{path}[{i}]")
    elif isinstance(expected, float):
        np.testing.assert_allclose(actual, expected, rtol=1e-6, err_msg=path)
    else:
        assert actual == expected, (path, actual, expected)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_program_matches_tf(name):
    program, jobs = programs.PROGRAMS[name]
    cluster = InProcessCluster(jobs)
    try:
        actual = json.loads(json.dumps(program(tf, cluster)))
    finally:
        cluster.stop()
    _close(actual, EXPECTED[name], name)
