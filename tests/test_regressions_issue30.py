"""Behaviour earlier issues delivered that a review found broken again (issue 30, 14):
compared with what TF 2.21 says and does."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.ops import GRAPH_DEF_VERSION


def _graph():
    g = af.Graph()
    with g.as_default():
        af.constant(1.0, name="s")
    return g


@pytest.mark.parametrize("name", ["s:\u00b2", "s:x", "s:0:0", "s:"])
async def test_a_fetch_that_is_not_a_tensor_name_says_so_in_tfs_words(name):
    async with af.Session(graph=_graph()) as sess:
        with pytest.raises(ValueError) as info:
            await sess.run(name)
    assert str(info.value) == (
        f"Argument `fetch` = {name} cannot be interpreted as a Tensor. (The name '{name}' "
        "looks a like a Tensor name, but is not a valid one. Tensor names must be of the "
        "form \"<op_name>:<output_index>\".)")


async def test_output_indices_read_as_pythons_int_reads_them():
    """TF reads the index with int(): "s:-1" is the last output, "s:+0" the first, and
    "s:١" (an Arabic-Indic one) output 1, which s does not have."""
    async with af.Session(graph=_graph()) as sess:
        assert await sess.run("s:-1") == np.float32(1.0)
        assert await sess.run("s:+0") == np.float32(1.0)
        with pytest.raises(ValueError, match="exists but only has 1 outputs"):
            await sess.run("s:\u0661")


@pytest.mark.parametrize("field,value,message", [
    ("min_consumer", 100000, f"GraphDef min consumer version 100000 above current version "
                             f"{GRAPH_DEF_VERSION} for aioflow"),
    ("producer", -1, "GraphDef producer version -1 below min producer 0 supported by "
                     "aioflow"),
    ("bad_consumers", GRAPH_DEF_VERSION, f"GraphDef disallows consumer version "
                                         f"{GRAPH_DEF_VERSION}.  Please upgrade aioflow"),
])
async def test_a_session_extended_with_an_unreadable_graph_def_version_says_which(
        field, value, message):
    g = _graph()
    versions = g.graph_def_versions
    if field == "bad_consumers":
        versions.bad_consumers.append(value)
    else:
        setattr(versions, field, value)
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await sess.run("s:0")
    assert info.value.message.startswith(message)


async def test_scalar_summary_writes_a_non_utf8_tag_as_tf_does():
    """TF 2.21: tf.raw_ops.ScalarSummary(tags=[b'\\xff\\xfe', b'ok'], values=[1.5, 2.0])."""
    g = af.Graph()
    with g.as_default():
        out = apply_op("ScalarSummary", tags=af.constant([b"\xff\xfe", b"ok"]),
                       values=af.constant([1.5, 2.0]))
    async with af.Session(graph=g) as sess:
        got = await sess.run(out)
    assert got == b"\n\t\n\x02\xff\xfe\x15\x00\x00\xc0?\n\t\n\x02ok\x15\x00\x00\x00@"


async def test_cost_graph_lists_the_nodes_of_compiled_segments():
    """RunMetadata.cost_graph of a step the cost model measures, after the graph's
    straight-line chain runs as a compiled segment (40 steps): every node of the
    partition, each output with its size, as TF lists them."""
    from aioflow.proto import config_pb2

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 4], name="x")
        d = af.abs(af.exp(af.sigmoid(af.tanh(x, name="a"), name="b"), name="c"), name="d")
        af.reduce_sum(d * 2.0, name="z")
    config = config_pb2.ConfigProto(graph_options=config_pb2.GraphOptions(
        build_cost_model=10, build_cost_model_after=20))
    async with af.Session(graph=g, config=config) as sess:
        for _ in range(40):
            md = config_pb2.RunMetadata()
            await sess.run("z:0", {"x:0": np.ones((2, 4), np.float32)}, run_metadata=md)
    sizes = {n.name: [o.size for o in n.output_info] for n in md.cost_graph.node}
    for name in ("a", "b", "c", "d", "mul"):
        assert sizes[name] == [32], (name, sizes)
    assert sizes["z"] == [4]
