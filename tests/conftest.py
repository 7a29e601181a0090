"""Fixtures shared by the test modules: a fresh default graph, TF-written GraphDefs from
tests/data, a run that returns its partition graphs, user-registered ops (the public way
to put a kernel with chosen behaviour in a graph), and the executor's two modes
(compiled segments on, compiled at first use, and off) for the modules that exercise
the executor."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import aioflow as af
from aioflow.framework import op_def_registry, op_kernel
from aioflow.framework.op_def_library import apply_op
from aioflow.kernels.onednn import backend as onednn_backend
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"

#: The executor modes a `segments_mode` test runs in: the AIOFLOW_SEGMENTS value of each.
#: "eager" compiles every segment the first time it runs, so a test's first run already
#: goes through the generated code; "0" runs every node on its own.
SEGMENT_MODES = {"segments": "eager", "no_segments": "0"}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "segment_modes(*modes): run a segments_mode test only in these modes "
                   f"(of {', '.join(SEGMENT_MODES)}), e.g. a slow test whose point is one mode")
    config.addinivalue_line(
        "markers", "executor_types(*names): run an executor_type test only under the default "
                   "executor and these schedules of EXECUTOR_SCHEDULES (none: the default "
                   "only, for a test of the default executor's thread pool)")


def pytest_generate_tests(metafunc):
    """Run each test that uses `segments_mode` (a module's `pytestmark = pytest.mark.
    usefixtures("segments_mode")`) once per mode, or in those its marker names."""
    if "segments_mode" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("segment_modes")
    modes = marker.args if marker is not None else tuple(SEGMENT_MODES)
    unknown = set(modes) - set(SEGMENT_MODES)
    if unknown:
        raise ValueError(f"{metafunc.definition.nodeid}: unknown segment modes {unknown}")
    if "executor_type" in metafunc.fixturenames:
        # The default executor in each segment mode; the single-threaded one (which
        # compiles no segments) once per schedule.
        only = metafunc.definition.get_closest_marker("executor_types")
        names = [n for n in EXECUTOR_SCHEDULES if only is None or n in only.args]
        combos = [(mode, "DEFAULT") for mode in modes] + [(modes[-1], n) for n in names]
        metafunc.parametrize(("segments_mode", "executor_type"), combos, indirect=True,
                             ids=[f"{m}-{t}" for m, t in combos])
        return
    metafunc.parametrize("segments_mode", modes, indirect=True)


#: The executor schedules an `executor_type` test also runs under besides the default
#: executor: name -> (ConfigProto.experimental.executor_type, seed of the ready order).
EXECUTOR_SCHEDULES = {"single_threaded": ("SINGLE_THREADED_EXECUTOR", None),
                      "single_threaded_shuffled": ("SINGLE_THREADED_EXECUTOR", 14)}


@pytest.fixture
def executor_type(request):
    """The executor every step of this test runs with (a module's `pytestmark =
    pytest.mark.usefixtures("segments_mode", "executor_type")`): the default one, or a
    single-threaded schedule of EXECUTOR_SCHEDULES through schedule_override."""
    name = getattr(request, "param", "DEFAULT")
    if name == "DEFAULT":
        yield name
        return
    from aioflow.runtime.executor_factory import schedule_override

    executor, seed = EXECUTOR_SCHEDULES[name]
    with schedule_override(executor, seed):
        yield name


@pytest.fixture
def segments_mode(request, monkeypatch) -> str:
    """The executor mode of this test ("segments" or "no_segments"), set through
    AIOFLOW_SEGMENTS: executors read it when they are built, so at a Session's first run
    of a signature (the variable must be set before that, which a fixture is)."""
    mode = getattr(request, "param", "segments")
    monkeypatch.setenv("AIOFLOW_SEGMENTS", SEGMENT_MODES[mode])
    return mode


@pytest.fixture
def graph():
    """A fresh graph, the default graph for the test (tests may enter it again)."""
    g = af.Graph()
    with g.as_default():
        yield g


def load_graph_def(name: str) -> graph_pb2.GraphDef:
    """The GraphDef TensorFlow wrote as tests/data/<name>.pb."""
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString((DATA / f"{name}.pb").read_bytes())
    return graph_def


@pytest.fixture(name="load_graph_def")
def load_graph_def_fixture():
    """`load_graph_def(name)`: a TF-written GraphDef of tests/data."""
    return load_graph_def


async def run_with_partition_graphs(sess, fetches, feed=None, options=None):
    """Run `fetches` asking for the partition graphs (as the executors ran them, after the
    optimizer); returns (values, {device: partition GraphDef})."""
    run_options = af.RunOptions()
    if options is not None:
        run_options.CopyFrom(options)
    run_options.output_partition_graphs = True
    md = af.RunMetadata()
    out = await sess.run(fetches, feed, options=run_options, run_metadata=md)
    return out, {g.node[0].device: g for g in md.partition_graphs}


@pytest.fixture(name="run_with_partition_graphs")
def run_with_partition_graphs_fixture():
    """`await run_with_partition_graphs(sess, fetches, feed)` -> (values, {device: part})."""
    return run_with_partition_graphs


_user_ops: dict[str, type] = {}


def register_user_op(name: str, kernel: type, *, inputs=("x: T",), outputs=("y: T",),
                     attrs=("T: type",), stateful: bool = True):
    """Register op `name` with `kernel` as its CPU kernel, as a user's extension would
    (op_def_registry.register_op + op_kernel.register_kernel), and return its builder:
    `op(x=tensor, name=...)`. The registries are global to the process, so an op is
    registered once; registering the same name with another kernel is an error.
    Stateful by default: neither folded nor merged by the optimizer."""
    known = _user_ops.get(name)
    if known is None:
        builder = op_def_registry.register_op(name)
        for spec in inputs:
            builder.input(spec)
        for spec in outputs:
            builder.output(spec)
        for spec in attrs:
            builder.attr(spec)
        if stateful:
            builder.set_is_stateful()
        op_kernel.register_kernel(name, "CPU")(kernel)
        _user_ops[name] = kernel
    elif known is not kernel:
        raise ValueError(f"user op {name} is registered with {known.__name__} already")
    return functools.partial(apply_op, name)


@pytest.fixture(name="user_op")
def user_op_fixture():
    """`user_op(name, kernel_class, inputs=..., outputs=..., attrs=...)` -> op builder."""
    return register_user_op


def pytest_collection_modifyitems(items):
    """Tests marked `ray` run last, together: the one local Ray cluster they share lives
    only while they run (started by the first, stopped at session end)."""
    items.sort(key=lambda item: item.get_closest_marker("ray") is not None)


@pytest.fixture(scope="session")
def ray_address(tmp_path_factory):
    """The address of one local Ray cluster (`ray.init(num_cpus=2)`), shared by every
    test marked `ray`: started once (some 13 s), shut down at session end. Ray picks free
    ports for its services (no fixed port to clash on); its files (sockets, logs) go
    under pytest's tmp, in a short folder (Unix socket paths must stay under 108 bytes).
    Skips cleanly without the ray extra."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("grpc")
    temp = tmp_path_factory.mktemp("ray", numbered=False)
    context = ray.init(address="local", num_cpus=2, include_dashboard=False,  # (a new
                       log_to_driver=False, _temp_dir=str(temp))  # one, whatever RAY_ADDRESS)
    yield context.address_info["gcs_address"]
    ray.shutdown()


@pytest.fixture
def numpy_products(monkeypatch):
    """The NumPy kernels' own products (OpenBLAS, the pool by size): with the onednn
    extra, its float32 MatMul kernels fall back to them (tests/test_onednn_matmul.py
    tests those)."""
    monkeypatch.setattr(onednn_backend, "ACTIVE", False)
