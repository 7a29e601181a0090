"""tf.data against TensorFlow 2.21 (tests/data/make_data_fixtures_tf.py wrote
data_tf.json): the OpDefs field by field; the GraphDefs af.data builds for 43 TF 1.x
pipeline programs node for node; and each program's runs (elements, seeded shuffle
orders, reshuffles, interleave orders, padded batches, TFRecord/text/fixed-length
files, corrupted records, the OutOfRangeError at the end, step for step), replayed on
the graph aioflow builds and on TF's GraphDef imported (its function library run as TF
wrote it)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_data_fixtures_tf as tf_programs  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

FIXTURE = json.loads((DATA / "data_tf.json").read_text())
PROGRAMS = FIXTURE["programs"]
ROOT = DATA.parent.parent  # the file programs name their files from the project root


@pytest.fixture(autouse=True, scope="module")
def _in_project_root():
    before = os.getcwd()
    os.chdir(ROOT)
    yield
    os.chdir(before)


def _graph_def(record) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(bytes.fromhex(record["graph_def"]))
    return graph_def


def _normalized(graph_def: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """The nodes, with function names freed of what differs by process: TF's uid in
    `__inference_<what>_<n>` and the hash in `_make_dataset_<hash>`; no library."""
    out = graph_pb2.GraphDef()
    out.node.extend(graph_def.node)
    for node in out.node:
        for value in node.attr.values():
            if value.HasField("func"):
                value.func.name = re.sub(r"^(__inference_.*)_\d+$", r"\1_N", value.func.name)
                value.func.name = re.sub(r"^_make_dataset_.*$", "_make_dataset_H",
                                         value.func.name)
    return out


def _value(record):
    if record["dtype"] == "string":
        flat = [v.encode("latin-1") for v in record["value"]]
        return np.array(flat, dtype=object).reshape(record["shape"])
    return np.array(record["value"], dtype=record["dtype"]).reshape(record["shape"])


def _assert_values(got, want, where):
    assert len(got) == len(want), where
    for g, w in zip(got, want, strict=True):
        if w is None:  # an op's run
            assert g is None, where
            continue
        w_arr = _value(w)
        g_arr = np.asarray(g)
        assert g_arr.shape == w_arr.shape, (where, g_arr, w_arr)
        if w["dtype"] == "string":
            assert g_arr.tolist() == w_arr.tolist(), (where, g_arr, w_arr)
        else:
            assert g_arr.dtype == w_arr.dtype, (where, g_arr.dtype, w_arr.dtype)
            np.testing.assert_array_equal(g_arr, w_arr, err_msg=str(where))


async def _replay(graph, record, name):
    """Run the fixture's steps in one session of `graph`; compare with TF's results."""
    names = record["names"]
    async with af.Session(graph=graph) as sess:
        fetched = {}
        for i, (step, want) in enumerate(zip(record["steps"], record["results"],
                                             strict=True)):
            fetches = [n for key in step["fetch"] for n in names[key]]
            feeds = {}
            for key, value in step["feed"].items():
                feeds[names[key][0]] = (fetched[value[1:]] if isinstance(value, str)
                                        else _value(value))
            where = (name, i, step["fetch"])
            try:
                got = await sess.run(fetches, feeds)
            except errors.OpError as e:
                assert "error" in want, (where, e)
                assert type(e).__name__ == want["error"], (where, e)
                assert e.message.split("\n\t [[")[0] == want["message"], where
                continue
            assert "values" in want, (where, want)
            if "ha" in step["fetch"]:  # string handles: aioflow's own bytes
                fetched.update(zip(step["fetch"], got, strict=True))
                continue
            _assert_values(got, want["values"], where)


def test_op_defs_equal_tf():
    for name, hexdef in FIXTURE["opdefs"].items():
        want = op_def_pb2.OpDef()
        want.ParseFromString(bytes.fromhex(hexdef))
        assert ours(name) == without_docs(want), name


def test_there_are_enough_programs():
    assert len(PROGRAMS) >= 20


@pytest.fixture(scope="module")
def built():
    """Each program built by aioflow: (graph, GraphDef)."""
    out = {}
    for name, fn in tf_programs.PROGRAMS.items():
        graph = af.Graph()
        with graph.as_default():
            fn(af)
        out[name] = graph
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_def_is_tfs(built, name):
    mine = _normalized(built[name].as_graph_def())
    ref = _normalized(_graph_def(PROGRAMS[name]))
    assert_same_graph(mine, ref)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
async def test_runs_equal_tf(built, name):
    await _replay(built[name], PROGRAMS[name], name)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
async def test_tf_graph_def_runs_equal_tf(name):
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(_graph_def(PROGRAMS[name]), name="")
    await _replay(graph, PROGRAMS[name], name)


async def test_tf2_function_graphs_run_equal_tf():
    """Datasets and iterators inside tf.functions (TF 2-era graphs: AnonymousIteratorV3,
    ShuffleDatasetV3 with a DummySeedGenerator, `for x in dataset` as Scan/Reduce,
    CacheDatasetV2, OptionsDataset), called by StatefulPartitionedCall: TF's GraphDef
    runs to TF's values."""
    record = FIXTURE["tf2_graphs"]["functions"]
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(_graph_def(record), name="")
    ops = {n.op for f in _graph_def(record).library.function for n in f.node_def}
    assert {"AnonymousIteratorV3", "MakeIterator", "IteratorGetNext", "ScanDataset",
            "ReduceDataset", "ShuffleDatasetV3", "DummySeedGenerator", "CacheDatasetV2",
            "DummyMemoryCache", "OptionsDataset", "ShuffleAndRepeatDataset"} <= ops
    await _replay(graph, record, "tf2_functions")


async def test_tf2_saved_model_with_a_pipeline_runs_equal_tf():
    """A TF 2 SavedModel whose signature makes a dataset, loops over it and takes an
    iterator's first element (tests/data/data_saved_model, written by TF)."""
    record = FIXTURE["tf2_graphs"]["saved_model"]
    model = await af.saved_model.load(str(DATA / "data_saved_model"))
    try:
        out = await model.signatures["serving_default"](x=_value(record["x"]))
    finally:
        await model.close()
    for key, want in record["outputs"].items():
        _assert_values([out[key]], [want], key)
