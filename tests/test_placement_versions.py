"""Placement and versions as TF's DirectSession: place_pruned_graph (each step's pruned
graph placed, so a node no step needs may be unplaceable), colocation groups whose
members request conflicting devices (TF's placer error, soft placement, the importer's
and builder's devices), GraphDef.versions merged and checked on extend, list_devices
and Session.reset, against TF 2.21 (tests/data/direct_session_tf.json, written by
tests/data/make_direct_session_tf.py)."""

from __future__ import annotations

import json

import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.ops import GRAPH_DEF_VERSION
from aioflow.proto import graph_pb2, versions_pb2
from aioflow.runtime.direct_session import DirectSession
from tests.conftest import DATA

TF = json.loads((DATA / "direct_session_tf.json").read_text())


def _check(case: str, exc: pytest.ExceptionInfo) -> None:
    expected = TF[case]
    assert type(exc.value).__name__ == expected["error"]
    assert exc.value.message.split("\n")[0] == expected["message"]


# -- place_pruned_graph ---------------------------------------------------------------
def _unplaceable_graph():
    x = af.placeholder(af.float32, [], name="x")
    with af.device("/device:GPU:0"):
        unplaceable = af.add(x, 1.0, name="unplaceable")
    fine = af.multiply(x, 2.0, name="fine")
    return x, unplaceable, fine


@pytest.mark.parametrize("pruned", [False, True])
async def test_place_pruned_graph(graph, pruned):
    x, unplaceable, fine = _unplaceable_graph()
    config = af.ConfigProto(graph_options=af.GraphOptions(place_pruned_graph=pruned))
    async with af.Session(config=config) as sess:
        for name, fetch in (("fine", fine), ("unplaceable", unplaceable)):
            expected = TF[f"pruned_{pruned}_{name}"]
            if "value" in expected:
                assert await sess.run(fetch, {x: 3.0}) == expected["value"]
            else:
                with pytest.raises(errors.InvalidArgumentError) as e:
                    await sess.run(fetch, {x: 3.0})
                _check(f"pruned_{pruned}_{name}", e)


async def test_place_pruned_graph_places_each_step_and_partial_runs(graph):
    x, unplaceable, fine = _unplaceable_graph()
    y = af.placeholder(af.float32, [], name="y")
    both = fine + y
    config = af.ConfigProto(graph_options=af.GraphOptions(place_pruned_graph=True),
                            device_count={"CPU": 2})
    async with af.Session(config=config) as sess:
        with af.device("/device:CPU:1"):
            later = af.identity(fine, name="later")  # added after the first run
        assert await sess.run(both, {x: 1.0, y: 1.0}) == 3.0
        out, parts = await _run_parts(sess, later, {x: 2.0})
        assert out == 4.0 and set(parts) == {"/job:localhost/replica:0/task:0/device:CPU:0",
                                             "/job:localhost/replica:0/task:0/device:CPU:1"}
        h = await sess.partial_run_setup([fine, both], [x, y])
        assert await sess.partial_run(h, fine, {x: 5.0}) == 10.0
        assert await sess.partial_run(h, both, {y: 1.0}) == 11.0


async def test_place_pruned_graph_keeps_stateful_nodes_where_they_were(graph):
    v = af.Variable(0.0, name="v")
    init = af.assign(v, 5.0, name="init")  # colocated with v (its _class)
    init.op._set_device("/device:CPU:1")  # the group asks for CPU:1 when init is in it
    config = af.ConfigProto(device_count={"CPU": 2},
                            graph_options=af.GraphOptions(place_pruned_graph=True))
    async with af.Session(config=config) as sess:
        await sess.run(init)
        # Alone, v's group asks for no device; it stays on CPU:1, where its value is.
        assert await sess.run(v) == TF["pruned_stateful_read"]["value"]
        md = af.RunMetadata()
        await sess.run(v, options=af.RunOptions(output_partition_graphs=True),
                       run_metadata=md)
        devices = {n.name: n.device for part in md.partition_graphs for n in part.node}
        assert devices["v"] == TF["pruned_stateful_device"]["value"]


async def _run_parts(sess, fetch, feed):
    md = af.RunMetadata()
    out = await sess.run(fetch, feed, options=af.RunOptions(output_partition_graphs=True),
                         run_metadata=md)
    return out, {g.node[0].device for g in md.partition_graphs}


# -- colocation groups with conflicting requested devices ----------------------------
def _conflict_graph():
    with af.device("/device:CPU:0"):
        a = af.constant(1.0, name="a")
    with af.device("/device:CPU:1"):
        b0 = af.constant(2.0, name="b0")
        with af.colocate_with(a):
            built = af.identity(b0, name="built")
    with af.colocate_with(a):
        conflict = af.identity(b0, name="conflict")
    conflict.op._set_device("/device:CPU:1")
    return built, conflict


async def test_builder_gives_a_colocated_op_its_groups_device(graph):
    built, _ = _conflict_graph()
    assert built.device == TF["builder_colocated_device"]


async def test_conflicting_group_is_tf_placer_error(graph):
    _, conflict = _conflict_graph()
    async with af.Session(config=af.ConfigProto(device_count={"CPU": 2})) as sess:
        with pytest.raises(errors.InvalidArgumentError) as e:
            await sess.run(conflict)
        _check("conflict_hard", e)


async def test_conflicting_group_with_soft_placement(graph):
    _, conflict = _conflict_graph()
    config = af.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
    async with af.Session(config=config) as sess:
        md = af.RunMetadata()
        out = await sess.run(conflict, options=af.RunOptions(output_partition_graphs=True),
                             run_metadata=md)
        assert out == TF["conflict_soft"]["value"]
        devices = {n.name: n.device for g in md.partition_graphs for n in g.node}
        assert devices["conflict"] == TF["conflict_soft_devices"]["conflict"]["value"]


async def test_conflicting_group_in_a_raw_graph_def():
    """The TF-written GraphDef, given to the runtime as it is (no importer)."""
    graph_def = graph_pb2.GraphDef.FromString(bytes.fromhex(TF["conflict_graph_def"]))
    direct = DirectSession(af.ConfigProto(device_count={"CPU": 2}))
    try:
        with pytest.raises(errors.InvalidArgumentError) as e:
            direct.extend(graph_def)
        _check("conflict_hard", e)
        assert direct.num_nodes == 0  # rolled back
    finally:
        direct.close()


def test_importer_gives_colocated_ops_their_groups_device():
    graph_def = graph_pb2.GraphDef.FromString(bytes.fromhex(TF["conflict_graph_def"]))
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    assert {op.name: op.device for op in g.get_operations()} == TF["imported_devices"]


# -- GraphDef.versions on extend ---------------------------------------------------------
def _extension(name: str, producer: int, min_consumer: int = 0, bad=()) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    node = graph_def.node.add(name=name, op="NoOp")
    del node
    graph_def.versions.CopyFrom(versions_pb2.VersionDef(
        producer=producer, min_consumer=min_consumer, bad_consumers=list(bad)))
    return graph_def


def test_extend_checks_and_merges_versions():
    direct = DirectSession()
    try:
        direct.extend(_extension("n0", GRAPH_DEF_VERSION, 0, [3]))
        with pytest.raises(errors.InvalidArgumentError) as e:
            direct.extend(_extension("n1", GRAPH_DEF_VERSION - 1))
        assert e.value.message == (f"Can't extend GraphDef at version {GRAPH_DEF_VERSION} "
                                   f"with graph at version {GRAPH_DEF_VERSION - 1}")
        with pytest.raises(errors.InvalidArgumentError, match="min consumer version"):
            direct.extend(_extension("n1", GRAPH_DEF_VERSION, GRAPH_DEF_VERSION + 1))
        with pytest.raises(errors.InvalidArgumentError, match="disallows consumer version"):
            direct.extend(_extension("n1", GRAPH_DEF_VERSION, 0, [GRAPH_DEF_VERSION]))
        assert direct.num_nodes == 1  # each failed extension left the graph as it was
        direct.extend(_extension("n1", GRAPH_DEF_VERSION, 2, [3, 5]))
        versions = direct.graph_def.versions
        assert (versions.producer, versions.min_consumer) == (GRAPH_DEF_VERSION, 2)
        assert list(versions.bad_consumers) == [3, 5]
    finally:
        direct.close()


def test_first_extension_is_checked_too():
    direct = DirectSession()
    try:
        with pytest.raises(errors.InvalidArgumentError, match="min consumer version"):
            direct.extend(_extension("n0", GRAPH_DEF_VERSION, GRAPH_DEF_VERSION + 1))
        assert direct.num_nodes == 0
    finally:
        direct.close()


# -- list_devices, Session.reset ---------------------------------------------------------
async def test_list_devices(graph):
    async with af.Session() as sess:
        devices = sess.list_devices()
        assert [[d.name, d.device_type, d.memory_limit_bytes] for d in devices] == \
            TF["list_devices"]
        assert devices[0].incarnation == sess._direct.device_mgr.devices[0].incarnation
    async with af.Session(config=af.ConfigProto(device_count={"CPU": 3})) as sess:
        assert [d.name[-5:] for d in sess.list_devices()] == ["CPU:0", "CPU:1", "CPU:2"]


async def test_reset_clears_containers_then_closes_every_session(graph):
    v = af.Variable(1.0, name="v")
    async with af.Session() as s1, af.Session() as s2:
        await s1.run(v.initializer)
        await s2.run(v.initializer)
        af.Session.reset("", ["other"])
        for sess in (s1, s2):
            with pytest.raises(errors.CancelledError) as e:
                await sess.run(v)
            _check("run_after_reset", e)
    async with af.Session() as s3:  # sessions opened later are not affected
        await s3.run(v.initializer)
        assert await s3.run(v) == 1.0
    with pytest.raises(errors.UnavailableError):  # a cluster target nobody serves
        af.Session.reset("grpc://localhost:1")
