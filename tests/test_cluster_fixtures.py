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


# -- the wire: messages TF serialized parse in aioflow's cluster protos --------------------
def _wire(name: str) -> bytes:
    return bytes.fromhex(EXPECTED["wire"][name])


def test_tf_server_def_and_device_attributes_parse():
    from aioflow.proto import device_attributes_pb2, tensorflow_server_pb2

    sd = tensorflow_server_pb2.ServerDef.FromString(_wire("ServerDef"))
    assert (sd.job_name, sd.task_index, sd.protocol, sd.port) == ("worker", 1, "grpc", 2)
    assert sd.default_session_config.operation_timeout_in_ms == 250
    assert tf.train.ClusterSpec(sd.cluster).as_dict() == {"worker": ["a:1", "b:2"]}
    assert sd.SerializeToString() == _wire("ServerDef")  # and back, byte for byte
    dev = device_attributes_pb2.DeviceAttributes.FromString(_wire("DeviceAttributes"))
    assert (dev.name, dev.device_type, dev.memory_limit, dev.incarnation) == (
        "/job:w/replica:0/task:0/device:CPU:0", "CPU", 268435456, 2**63 + 5)


@pytest.mark.parametrize("name, expected", [
    ("float32", np.arange(6, dtype=np.float32).reshape(2, 3)),
    ("int64", np.array([-1, 2**40], np.int64)),
    ("bool", np.array([True, False])),
    ("scalar_f64", np.float64(2.5)),
    ("string", np.array([b"ab", b""], object)),
])
def test_tf_tensors_through_recv_tensor_response(name, expected):
    """A RecvTensorResponse carrying TF's TensorProto decodes (hand-written reader) to
    TF's value; what aioflow writes parses as the message and holds the same value."""
    from aioflow.distributed import wire
    from aioflow.framework import tensor_util
    from aioflow.proto import worker_pb2

    tensor = _wire(f"TensorProto_{name}")
    response = b"\x0a" + wire._varint(len(tensor)) + tensor + b"\x18\x05"
    value, is_dead = wire.decode_recv_tensor_response(response)
    assert not is_dead and np.shape(value) == np.shape(expected)
    np.testing.assert_array_equal(value, expected)
    parsed = worker_pb2.RecvTensorResponse.FromString(wire.encode_recv_tensor_response(
        (expected, False)))
    assert not parsed.is_dead
    np.testing.assert_array_equal(tensor_util.make_ndarray(parsed.tensor), expected)
    assert wire.decode_recv_tensor_response(wire.encode_recv_tensor_response(
        (None, True))) == (None, True)
