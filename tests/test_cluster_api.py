"""TF 1.x's cluster API on in-process servers: ClusterSpec, Server, ServerDef,
replica_device_setter, TF_CONFIG, the awaitable Session on a cluster target (its
config's cluster_def, list_devices, reset), and the master's step protocol: one
registration per signature, one RunGraph per task, the first error aborting the step
on every task, deadlines, cancellation, per-step cleanup everywhere."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import cluster_pb2, config_pb2, tensorflow_server_pb2

_PORTS = itertools.count(42000)


def _cluster(**jobs) -> af.train.ClusterSpec:
    return af.train.ClusterSpec({job: [f"localhost:{next(_PORTS)}" for _ in range(n)]
                                 for job, n in jobs.items()})


@pytest.fixture(scope="module")
def ps_worker():
    """ps:1, worker:2, in process (no sockets); {(job, task): Server}."""
    spec = _cluster(ps=1, worker=2)
    servers = {(job, i): af.train.Server(spec, job, i, protocol="in_process")
               for job in ("ps", "worker") for i in range(spec.num_tasks(job))}
    yield servers
    for server in servers.values():
        server.stop()


# -- ClusterSpec ------------------------------------------------------------------------
def test_cluster_spec_forms_and_accessors():
    spec = af.train.ClusterSpec({"worker": ["w0:1", "w1:1"], "ps": {2: "ps2:1"}})
    assert spec.jobs == ["worker", "ps"]
    assert spec.as_dict() == {"worker": ["w0:1", "w1:1"], "ps": {2: "ps2:1"}}
    assert spec.job_tasks("ps") == [None, None, "ps2:1"]
    assert spec.num_tasks("ps") == 1 and spec.task_indices("ps") == [2]
    assert spec.task_address("worker", 1) == "w1:1"
    cluster_def = spec.as_cluster_def()
    assert [j.name for j in cluster_def.job] == ["ps", "worker"]  # sorted, as TF's
    again = af.train.ClusterSpec(cluster_def)
    assert again == spec and af.train.ClusterSpec(again).as_dict() == spec.as_dict()
    assert repr(spec) == "ClusterSpec({'ps': {2: 'ps2:1'}, 'worker': ['w0:1', 'w1:1']})"
    assert not af.train.ClusterSpec({}) and bool(spec)


def test_cluster_spec_errors():
    spec = af.train.ClusterSpec({"worker": ["w0:1"]})
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        spec.num_tasks("ps")
    with pytest.raises(ValueError, match="No task with index 3 in job 'worker'"):
        spec.task_address("worker", 3)
    with pytest.raises(TypeError, match="must be a dictionary mapping"):
        af.train.ClusterSpec(["w0:1"])
    with pytest.raises(TypeError, match="The tasks for job 'worker' must be a list"):
        af.train.ClusterSpec({"worker": "w0:1"})
    with pytest.raises(TypeError, match="Task address 3 must be bytes or unicode"):
        af.train.ClusterSpec({"worker": [3]})


# -- Server -----------------------------------------------------------------------------
def test_server_def_and_target():
    spec = _cluster(worker=1, ps=2)
    server = af.train.Server(spec, job_name="ps", task_index=1, protocol="in_process",
                             config=config_pb2.ConfigProto(operation_timeout_in_ms=5))
    try:
        sd = server.server_def
        assert isinstance(sd, tensorflow_server_pb2.ServerDef)
        assert (sd.job_name, sd.task_index, sd.protocol) == ("ps", 1, "in_process")
        assert sd.cluster == spec.as_cluster_def()
        assert sd.default_session_config.operation_timeout_in_ms == 5
        assert server.target == "grpc://" + spec.task_address("ps", 1)
        server.start()  # a second start does nothing
    finally:
        server.stop()
    with pytest.raises(ValueError, match="Must specify an explicit `job_name`"):
        af.train.Server(spec, start=False)
    with pytest.raises(ValueError, match="Must specify an explicit `task_index`"):
        af.train.Server(spec, job_name="ps", start=False)
    lone = af.train.Server(cluster_pb2.ClusterDef(job=[cluster_pb2.JobDef(
        name="local", tasks={0: "localhost:1"})]), start=False, protocol="in_process")
    assert (lone.server_def.job_name, lone.server_def.task_index) == ("local", 0)
    with pytest.raises(TypeError, match="Could not convert"):
        af.train.Server(42)


async def test_create_local_server_runs_a_session():
    server = af.train.Server.create_local_server()
    try:
        assert server.server_def.protocol == "grpc"
        assert server.target.startswith("grpc://localhost:")
        assert not server.target.endswith(":0")  # the bound port
        with af.Graph().as_default() as g:
            out = af.constant([1.0, 2.0]) * 3.0
        async with af.Session(server.target, graph=g) as sess:
            np.testing.assert_array_equal(await sess.run(out), [3.0, 6.0])
            assert [d.name for d in sess.list_devices()] == [
                "/job:localhost/replica:0/task:0/device:CPU:0"]
    finally:
        server.stop()


# -- replica_device_setter --------------------------------------------------------------
def test_replica_device_setter_round_robin_and_greedy():
    assert af.train.replica_device_setter() is None
    assert af.train.replica_device_setter(cluster={"worker": ["w:1"]}) is None
    with af.Graph().as_default():
        with af.device(af.train.replica_device_setter(ps_tasks=2)):
            a = af.Variable(1.0, name="a")
            b = af.Variable(2.0, name="b")
            c = af.Variable(3.0, name="c")
            s = af.add(a, b, name="s")
        assert [v.op.device for v in (a, b, c)] == [
            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
        assert s.op.device == "/job:worker"
        greedy = af.train.GreedyLoadBalancingStrategy(2, af.train.byte_size_load_fn)
        with af.device(af.train.replica_device_setter(ps_tasks=2, ps_strategy=greedy)):
            big = af.Variable(np.zeros([100], np.float32), name="big")
            small1 = af.Variable(np.zeros([3], np.float32), name="small1")
            small2 = af.Variable(np.zeros([3], np.float32), name="small2")
        # 400 bytes on task 0; both small ones fit on task 1 before it catches up
        assert [v.op.device for v in (big, small1, small2)] == [
            "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1"]
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        af.train.replica_device_setter(ps_tasks=1, ps_strategy=3)


def test_tf_config_resolver(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"ps": ["p:1"], "worker": ["w0:1", "w1:1"]},'
                                    ' "task": {"type": "worker", "index": 1}}')
    resolver = af.distributed.TFConfigClusterResolver()
    assert resolver.cluster_spec().as_dict() == {"ps": ["p:1"], "worker": ["w0:1", "w1:1"]}
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)
    assert resolver.master() == "grpc://w1:1"
    assert resolver.master("ps", 0) == "grpc://p:1"
    monkeypatch.delenv("TF_CONFIG")
    assert af.distributed.TFConfigClusterResolver().master() == ""


# -- sessions on a cluster target -------------------------------------------------------
async def test_session_places_over_tasks_and_lists_devices(ps_worker):
    target = ps_worker[("worker", 0)].target
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [2])
        with af.device("/job:worker/task:1"):
            y = af.reduce_sum(x * x, name="y")
        with af.device("/job:ps/task:0"):
            z = af.add(y, 1.0, name="z")
    async with af.Session(target, graph=g) as sess:
        assert await sess.run(z, {x: [3.0, 4.0]}) == 26.0
        names = [d.name for d in sess.list_devices()]
        assert names[0] == "/job:worker/replica:0/task:0/device:CPU:0"  # the master's first
        assert sorted(names) == sorted(
            f"/job:{j}/replica:0/task:{t}/device:CPU:0"
            for j, t in (("ps", 0), ("worker", 0), ("worker", 1)))
        assert sess.sess_str == target


async def test_registered_once_per_signature_one_rungraph_per_task(ps_worker):
    workers = {k: s.worker for k, s in ps_worker.items()}
    before = {k: len(w.graph_mgr) for k, w in workers.items()}
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [])
        with af.device("/job:worker/task:1"):
            y = x + 1.0
        with af.device("/job:ps/task:0"):
            z = y * 2.0
    runs = {k: 0 for k in workers}
    originals = {}
    for k, w in workers.items():  # count the RunGraph calls each task gets
        def counting(*args, _k=k, _run=w.run_graph, **kwargs):
            runs[_k] += 1
            return _run(*args, **kwargs)
        originals[k] = w.run_graph
        w.run_graph = counting
    try:
        async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
            for i in range(5):
                assert await sess.run(z, {x: float(i)}) == (i + 1.0) * 2.0
            assert runs == {("worker", 0): 5, ("worker", 1): 5, ("ps", 0): 5}
    finally:
        for k, w in workers.items():
            w.run_graph = originals[k]
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
        for i in range(5):
            assert await sess.run(z, {x: float(i)}) == (i + 1.0) * 2.0
        await sess.run(y, {x: 1.0})  # another signature: tasks 0 and 1 only
        added = {k: len(w.graph_mgr) - before[k] for k, w in workers.items()}
        assert added == {("worker", 0): 2, ("worker", 1): 2, ("ps", 0): 1}
        # every task dropped every step's rendezvous (CleanupGraph)
        assert all(len(w.rendezvous_mgr) == 0 for w in workers.values())
    # closing the session deregisters its graphs on every task
    assert {k: len(w.graph_mgr) for k, w in workers.items()} == before


async def test_device_filters_keep_a_session_to_its_tasks():
    """ConfigProto.device_filters as TF's: the session contacts only the tasks a filter
    matches, so worker 0's session needs neither worker 1 (never started here) nor lists
    its devices; without filters it waits for worker 1 and is UnavailableError."""
    spec = _cluster(ps=1, worker=2)
    servers = [af.train.Server(spec, job, 0, protocol="in_process") for job in ("ps", "worker")]
    try:
        with af.Graph().as_default() as g:
            with af.device("/job:ps/task:0"):
                v = af.constant(20.0) + 1.0
            out = v * 2.0
        config = config_pb2.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"],
                                        operation_timeout_in_ms=300)
        async with af.Session(servers[1].target, graph=g, config=config) as sess:
            assert await sess.run(out) == 42.0
            assert sorted(d.name for d in sess.list_devices()) == [
                "/job:ps/replica:0/task:0/device:CPU:0",
                "/job:worker/replica:0/task:0/device:CPU:0"]
        config.ClearField("device_filters")
        async with af.Session(servers[1].target, graph=g, config=config) as sess:
            with pytest.raises(errors.UnavailableError, match="task:1 did not answer"):
                await sess.run(out)
    finally:
        for server in servers:
            server.stop()


async def test_session_config_cluster_def():
    """A session may name its own cluster (ConfigProto.cluster_def): the master places
    over that cluster's tasks."""
    spec = _cluster(worker=2)
    servers = [af.train.Server(spec, "worker", i, protocol="in_process") for i in range(2)]
    lone = af.train.Server({"worker": [spec.task_address("worker", 0)]}, protocol="in_process",
                           start=False)
    try:
        with af.Graph().as_default() as g:
            with af.device("/job:worker/task:1"):
                out = af.constant(2.0) * 21.0
        config = config_pb2.ConfigProto(cluster_def=spec.as_cluster_def())
        async with af.Session(servers[0].target, graph=g, config=config) as sess:
            assert await sess.run(out) == 42.0
    finally:
        for server in servers:
            server.stop()
    del lone


async def test_remote_error_aborts_the_step_on_every_task(ps_worker):
    """A task failing fails the step with its error (not the cancellations it causes);
    the other tasks' kernels waiting on it are aborted; the session goes on."""
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [])
        with af.device("/job:worker/task:1"):
            bad = af.check_numerics(af.math.log(x), "log of x")
        with af.device("/job:ps/task:0"):
            q = af.FIFOQueue(1, [af.float32], shapes=[[]])
            waits = q.dequeue()  # never fed: only the abort ends it
        out = bad + waits
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="log of x"):
            await sess.run(out, {x: -1.0})
        assert all(len(s.worker.rendezvous_mgr) == 0 for s in ps_worker.values())
        assert await sess.run(bad, {x: 1.0}) == 0.0


async def test_deadline_and_cancellation_stop_every_task(ps_worker):
    with af.Graph().as_default() as g:
        with af.device("/job:worker/task:1"):
            q = af.FIFOQueue(1, [af.float32], shapes=[[]])
            blocked = q.dequeue() + 1.0
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(blocked, options=config_pb2.RunOptions(timeout_in_ms=50))
        run = asyncio.ensure_future(sess.run(blocked))
        await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        worker1 = ps_worker[("worker", 1)].worker
        for _ in range(100):  # the cancellation reaches task 1 on its own loop
            if not worker1._active:
                break
            await asyncio.sleep(0.01)
        assert not worker1._active
        with g.as_default():
            enqueue = q.enqueue(5.0)
        await sess.run(enqueue)
        assert await sess.run(blocked) == 6.0


async def test_variables_live_on_their_task_and_reset(ps_worker):
    with af.Graph().as_default() as g:
        with af.device("/job:ps/task:0"):
            v = af.Variable(10.0, name="lives_on_ps")
        with af.device("/job:worker/task:1"):
            bump = v.assign_add(1.0)
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as s1:
        await s1.run(v.initializer)
        assert await s1.run(bump) == 11.0
    async with af.Session(ps_worker[("worker", 1)].target, graph=g) as s2:
        assert await s2.run(v) == 11.0  # another client session: the same variable
    af.Session.reset(ps_worker[("worker", 0)].target)
    async with af.Session(ps_worker[("worker", 1)].target, graph=g) as s3:
        with pytest.raises(errors.FailedPreconditionError):
            await s3.run(v)


def test_blocking_compat_session(ps_worker):
    from aioflow.compat import v1 as tf

    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            a = tf.constant([[1.0, 2.0]])
            m = tf.matmul(a, a, transpose_b=True)
        with tf.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
            np.testing.assert_array_equal(sess.run(m), [[5.0]])


async def test_a_blocked_step_does_not_stall_other_steps_on_the_same_tasks(ps_worker):
    """Steps are coroutines on the tasks' loops: one waiting on task 1 (a dequeue) leaves
    other steps through the same tasks running; then it completes when fed."""
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [])
        with af.device("/job:worker/task:1"):
            q = af.FIFOQueue(2, [af.float32], shapes=[[]])
            waiting = q.dequeue() * 10.0
            enqueue = q.enqueue(x)
            quick = x + 1.0
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
        blocked = asyncio.ensure_future(sess.run(waiting))
        for i in range(20):
            assert await sess.run(quick, {x: float(i)}) == i + 1.0
        assert not blocked.done()
        await sess.run(enqueue, {x: 4.0})
        assert await asyncio.wait_for(blocked, 10) == 40.0


async def test_in_graph_replication_towers_on_two_tasks(ps_worker):
    """In-graph replication: one client graph, a tower per worker task reading the ps's
    variable, their results combined on the ps: TF 1's towers, by placement alone."""
    with af.Graph().as_default() as g:
        with af.device("/job:ps/task:0"):
            w = af.Variable(np.array([[1.0], [2.0]], np.float32), name="tower_w")
        x = af.placeholder(af.float32, [4, 2])
        halves = af.split(x, 2)
        towers = []
        for task, part in enumerate(halves):
            with af.device(f"/job:worker/task:{task}"):
                towers.append(af.reduce_sum(af.matmul(part, w)))
        with af.device("/job:ps/task:0"):
            total = af.add_n(towers)
    value = np.arange(8, dtype=np.float32).reshape(4, 2)
    async with af.Session(ps_worker[("worker", 0)].target, graph=g) as sess:
        await sess.run(w.initializer)
        got = await sess.run([total, *towers], {x: value})
    expected = value @ np.array([[1.0], [2.0]], np.float32)
    assert got == [expected.sum(), expected[:2].sum(), expected[2:].sum()]
