"""Every GraphDef TensorFlow wrote (tests/data) parses, re-serialises byte for byte,
imports, and — for the core op set — runs to TensorFlow's values."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.importer import parse_graph_def
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.proto import graph_pb2

DATA = pathlib.Path(__file__).parent / "data"
MANIFEST = json.loads((DATA / "fixtures.json").read_text())
ALL = sorted(MANIFEST)
CORE = sorted(n for n in MANIFEST if n.startswith("core_"))


def _bytes(name: str) -> bytes:
    return (DATA / f"{name}.pb").read_bytes()


@pytest.mark.parametrize("name", ALL)
def test_parses_and_reserializes_byte_identically(name):
    data = _bytes(name)
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(data)
    assert len(graph_def.node) == MANIFEST[name]["num_nodes"]
    assert graph_def.SerializeToString(deterministic=True) == data


@pytest.mark.parametrize("name", ALL)
def test_imports_and_builds_a_valid_runtime_graph(name):
    graph_def = parse_graph_def(_bytes(name))
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    assert sorted(op.type for op in g.get_operations() if op.type) == \
        sorted(n.op for n in graph_def.node)
    runtime = convert_graph_def_to_graph(graph_def)
    assert runtime.num_op_nodes == len(graph_def.node)


@pytest.mark.usefixtures("segments_mode")  # compiled segments on and off
@pytest.mark.parametrize("name", CORE)
async def test_core_fixture_runs_to_tensorflow_values(name):
    entry = MANIFEST[name]
    values = np.load(DATA / f"{name}.npz", allow_pickle=True)
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse_graph_def(_bytes(name)), name="")
    feeds = {k[len("feed:"):]: values[k] for k in values.files if k.startswith("feed:")}
    fetches = entry["fetches"]
    async with af.Session(graph=g) as sess:
        got = await sess.run(fetches + entry.get("targets", []), feed_dict=feeds)
    for fetch, value in zip(fetches, got, strict=False):
        want = values[f"fetch:{fetch}"]
        value = np.asarray(value)
        assert value.dtype == want.dtype, fetch
        assert value.shape == want.shape, fetch
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(value, want, rtol=2e-6, atol=1e-6, err_msg=fetch)
        else:
            np.testing.assert_array_equal(value, want, err_msg=fetch)


def test_garbage_and_truncated_graph_defs_give_a_clear_error():
    data = _bytes("core_math")
    with pytest.raises(errors.InvalidArgumentError, match="Unable to parse GraphDef"):
        parse_graph_def(data[: len(data) // 2 + 3])
    with pytest.raises(errors.InvalidArgumentError, match="Unable to parse GraphDef"):
        parse_graph_def(b"\xff\xfe this is not a protobuf \x00\x01")
    with pytest.raises(ValueError, match="Unable to parse GraphDef"):
        with af.Graph().as_default():
            af.import_graph_def(b"\x0a\x05garbage")
