"""Step stats and the cost graph against TF 2.21's, from the same graph.

tests/data/make_step_stats_fixture.py recorded the RunMetadata TF's DirectSession
returned for a traced run with `build_cost_model` on (optimizers off). Times differ from
run to run; everything else is compared: which nodes have entries (`_SOURCE` too), their
labels (TF's oneDNN build labels MatMul `_MklMatMul`), outputs (dtype, shape, requested
and allocated bytes, which outputs share an allocation), the allocator memory each node
used, memory stats; and in the cost graph every node's device, inputs, outputs (size,
alias, shape, dtype), control inputs, memory sizes and `is_final`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aioflow as af

pytestmark = pytest.mark.usefixtures("segments_mode")  # compiled segments on and off

DATA = Path(__file__).resolve().parent / "data"
NAME = "step_stats_tf"


async def _run(runs: int = 2, trace: bool = True, every: int = 1, after: int = 0):
    spec = json.loads((DATA / f"{NAME}.json").read_text())
    graph_def = af.GraphDef()
    graph_def.ParseFromString((DATA / f"{NAME}.pb").read_bytes())
    arrays = np.load(DATA / f"{NAME}.npz")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    config = af.ConfigProto()
    config.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    config.graph_options.build_cost_model = every
    config.graph_options.build_cost_model_after = after
    options = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE if trace else 0)
    mds = []
    async with af.Session(graph=g, config=config) as sess:
        for _ in range(runs):
            md = af.RunMetadata()
            await sess.run(spec["fetches"], {k: arrays[f"feed:{k}"] for k in spec["feeds"]},
                           options=options, run_metadata=md)
            mds.append(md)
    return mds


def _tf_metadata():
    md = af.RunMetadata()
    md.ParseFromString((DATA / f"{NAME}_md.pb").read_bytes())
    return md


def _node_stats(md) -> dict:
    (dev,) = md.step_stats.dev_stats
    return {ns.node_name: ns for ns in dev.node_stats}


def _outputs(ns, alloc_names: dict) -> list:
    """(slot, dtype, shape, requested, allocated, the first node whose output had this
    allocation id) per output."""
    out = []
    for o in ns.output:
        desc = o.tensor_description
        alloc = desc.allocation_description
        owner = alloc_names.setdefault(alloc.allocation_id, ns.node_name) \
            if alloc.allocation_id else None
        out.append((o.slot, desc.dtype, [d.size for d in desc.shape.dim],
                    alloc.requested_bytes, alloc.allocated_bytes, owner))
    return out


async def test_step_stats_have_tensorflows_structure():
    ours, theirs = _node_stats((await _run())[-1]), _node_stats(_tf_metadata())
    assert list(ours) == list(theirs)  # TF's order too: the source, then as they ran
    ours_alloc, theirs_alloc = {}, {}
    for name, tf_ns in theirs.items():
        ns = ours[name]
        assert ns.timeline_label == tf_ns.timeline_label.replace("_MklMatMul", "MatMul")
        assert _outputs(ns, ours_alloc) == _outputs(tf_ns, theirs_alloc), name
        assert [(m.total_bytes, m.peak_bytes, m.live_bytes) for m in ns.memory] == [
            (m.total_bytes, m.peak_bytes, m.live_bytes) for m in tf_ns.memory], name
        assert [r.alloc_bytes for m in ns.memory for r in m.allocation_records] == [
            r.alloc_bytes for m in tf_ns.memory for r in m.allocation_records
            if r.alloc_bytes > 0], name  # TF's oneDNN MatMul also frees a scratch buffer
        assert ns.HasField("memory_stats") == tf_ns.HasField("memory_stats"), name
        assert ns.memory_stats == tf_ns.memory_stats, name
        assert ns.scheduled_nanos <= ns.all_start_nanos
        assert ns.op_start_rel_nanos <= ns.op_end_rel_nanos <= ns.all_end_rel_nanos
    # Where TF's allocator names its allocations, so does aioflow's record.
    assert {ns.output[0].tensor_description.allocation_description.allocator_name
            for ns in ours.values() if ns.output} == {"cpu"}


async def test_thread_names_are_filled_where_tensorflow_leaves_them_empty():
    (dev,) = (await _run(runs=1))[0].step_stats.dev_stats
    (tf_dev,) = _tf_metadata().step_stats.dev_stats
    assert not tf_dev.thread_names and not any(ns.thread_id for ns in tf_dev.node_stats)
    assert {ns.thread_id for ns in dev.node_stats} <= set(dev.thread_names)


def _cost_nodes(md) -> dict:
    """name -> the cost graph node, its ids turned into names."""
    names = {n.id: n.name for n in md.cost_graph.node}
    out = {}
    for n in md.cost_graph.node:
        out[n.name] = {
            "device": n.device,
            "inputs": [(names[i.preceding_node], i.preceding_port) for i in n.input_info],
            "outputs": [(o.size, o.alias_input_port, o.dtype, o.shape.SerializeToString())
                        for o in n.output_info],
            "controls": sorted(names[i] for i in n.control_input),
            "memory": (n.temporary_memory_size, n.persistent_memory_size),
            "times": (n.compute_time, n.memory_time),
            "is_final": n.is_final,
        }
    return out


async def test_cost_graph_has_tensorflows_fields():
    md = (await _run())[-1]
    ours, theirs = _cost_nodes(md), _cost_nodes(_tf_metadata())
    assert sorted(ours) == sorted(theirs)
    for name, node in theirs.items():
        if name == "_SINK":  # aioflow's graph also links the fetched node to the sink
            assert set(node["controls"]) <= set(ours[name]["controls"])
            continue
        assert ours[name] == node, name
    costs = {n.name: n.compute_cost for n in md.cost_graph.node}
    assert costs["mm"] >= 1 and costs["_SINK"] == 0
    assert len({n.id for n in md.cost_graph.node}) == len(md.cost_graph.node)


async def test_cost_graph_only_on_the_steps_build_cost_model_selects():
    # TF: step k (0-based) updates when k - after >= 0 and (k - after + 1) % every == 0.
    mds = await _run(runs=4, trace=False, every=2, after=1)
    assert [len(md.cost_graph.node) > 0 for md in mds] == [False, False, True, False]
    # An update step collects step stats even untraced, as TF's.
    assert [len(md.step_stats.dev_stats) for md in mds] == [0, 0, 1, 0]
    mds = await _run(runs=2, trace=False, every=0)
    assert not any(md.cost_graph.node for md in mds)


async def test_compute_cost_is_the_longest_op_time_seen():
    mds = await _run(runs=3)
    longest = {}
    for md in mds:
        for ns in _node_stats(md).values():
            t = ns.op_end_rel_micros - ns.op_start_rel_micros
            longest[ns.node_name] = max(longest.get(ns.node_name, 0), t)
    costs = {n.name: n.compute_cost for n in mds[-1].cost_graph.node}
    for name, t in longest.items():
        assert costs[name] == t, name


async def test_cost_graph_of_two_partitions():
    """Each partition's nodes, ids offset by the nodes listed before it (TF's GlobalId of
    a local cost model); its _Send nodes are final; each partition has its source."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        with af.device("/cpu:1"):
            y = af.multiply(x, 2.0, name="y")
        out = af.add(y, 1.0, name="out")
    config = af.ConfigProto(device_count={"CPU": 2})
    config.graph_options.build_cost_model = 1
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        value = await sess.run(out, {x: np.arange(3, dtype=np.float32)}, run_metadata=md)
    np.testing.assert_array_equal(value, np.arange(3) * 2 + 1)
    nodes = md.cost_graph.node
    assert len({n.id for n in nodes}) == len(nodes)
    by_device = {}
    for n in nodes:
        by_device.setdefault(n.device, []).append(n)
    assert [n.name for n in nodes].count("_SOURCE") == 2
    assert {n.name for n in by_device[""]} == {"_SOURCE", "_SINK"}
    sends = [n for n in nodes if n.is_final]
    assert sends and all("/_" in n.name for n in sends)
    names = {n.id: n.name for n in nodes}
    (y_node,) = [n for n in nodes if n.name == "y"]
    assert y_node.device.endswith("CPU:1") and y_node.output_info[0].size == 12
    assert [names[i.preceding_node] for i in y_node.input_info][1] == "y/y"
    assert len(md.step_stats.dev_stats) == 2  # collected for the model, untraced too
