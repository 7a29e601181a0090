"""TF 1's queue-based input pipelines (af.train.batch, shuffle_batch, limit_epochs,
input_producer, string/range/slice_input_producer, batch_join, shuffle_batch_join,
maybe_batch) against TensorFlow 2.21 (tests/data/make_input_fixtures_tf.py wrote
input_pipelines_tf.json): each program's GraphDef node for node, its queue runners,
summaries and local variables; then the values a pipeline run by af.train's queue-runner
tasks yields, step by step until OutOfRangeError, equal to what TF's session fetched
(seeded shuffles included: RandomShuffle and RandomShuffleQueue draw TF's Philox
streams). Then properties that hold whatever the timing: every element once per epoch."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2, op_def_pb2, summary_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_input_fixtures_tf as tf_programs  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

FIXTURE = json.loads((DATA / "input_pipelines_tf.json").read_text())
PROGRAMS = FIXTURE["programs"]
RUNS = sorted(name for name, record in PROGRAMS.items() if "steps" in record)


def _graph_def(record) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(bytes.fromhex(record["graph_def"]))
    return graph_def


def _build(program: str):
    graph = af.Graph()
    with graph.as_default():
        fetches = tf_programs.PROGRAMS[program](af)
    return graph, fetches


def _plain(value) -> dict:
    """A fetched value as the fixture records it."""
    arr = np.asarray(value)
    flat = arr.ravel().tolist()
    if arr.dtype == object or arr.dtype.kind in "SU":
        return {"dtype": "string", "shape": list(arr.shape),
                "value": [v.decode("latin-1") if isinstance(v, bytes) else v for v in flat]}
    return {"dtype": arr.dtype.name, "shape": list(arr.shape), "value": flat}


async def _run_pipeline(graph, fetches, max_steps=tf_programs.MAX_STEPS) -> list:
    """Initialise the variables, start the queue runners with a Coordinator, fetch until
    OutOfRangeError; stop and join the runners (as the fixture script does in TF)."""
    steps = []
    async with af.Session(graph=graph) as sess:
        with graph.as_default():
            init = [af.global_variables_initializer(), af.local_variables_initializer()]
        await sess.run(init)
        coord = af.train.Coordinator()
        tasks = af.train.start_queue_runners(sess, coord)
        for _ in range(max_steps):
            try:
                steps.append([_plain(v) for v in await sess.run(fetches)])
            except errors.OutOfRangeError as e:
                steps.append({"error": "OutOfRangeError", "message": e.message})
                break
        coord.request_stop()
        await coord.join(tasks, stop_grace_period_secs=10)
    return steps


def test_every_program_has_a_fixture():
    assert sorted(PROGRAMS) == sorted(tf_programs.PROGRAMS)
    assert FIXTURE["tensorflow"].startswith("2.21")


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_helpers_build_tfs_graph(program):
    graph, _ = _build(program)
    assert_same_graph(graph.as_graph_def(), _graph_def(PROGRAMS[program]))


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_queue_runners_summaries_and_local_variables_as_tfs(program):
    record = PROGRAMS[program]
    graph, _ = _build(program)
    runners = graph.get_collection(af.train.queue_runner.QUEUE_RUNNERS)
    assert [[qr.queue.name, [op.name for op in qr.enqueue_ops]] for qr in runners] == \
        record["queue_runners"]
    assert [t.name for t in graph.get_collection(af.GraphKeys.SUMMARIES)] == \
        record["summaries"]
    with graph.as_default():
        assert [v.name for v in af.local_variables()] == record["local_variables"]


def _lines(text: str) -> list[str]:
    """An error message's lines, without the process-wide queue number
    ('_3_batch/padding_fifo_queue') and the counts of a closed queue's "insufficient
    elements (requested 2, current size 0)": they depend on timing in TF too (a dequeue
    waiting when the queue closes has taken what there was and reports what it lacks; one
    that starts after the close reports the whole batch and the queue's size)."""
    return [re.sub(r" \(requested \d+, current size \d+\)", "",
                   re.sub(r"'_\d+_", "'_N_", line)) for line in text.split("\n")]


def _tf_error_line(text: str) -> str:
    """What TF's session says went wrong: its message's last unindented line (after the
    traceback of where the node was defined)."""
    return [line for line in _lines(text) if line and not line[0].isspace()][-1]


@pytest.mark.parametrize("program", RUNS)
async def test_pipeline_values_equal_tfs(program):
    record = PROGRAMS[program]
    graph, fetches = _build(program)
    assert [t.name for t in fetches] == record["fetch"]
    got = await _run_pipeline(graph, fetches)
    want = record["steps"]
    assert len(got) == len(want), (got, want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if isinstance(w, dict):
            assert isinstance(g, dict), (i, g)
            assert _tf_error_line(w["message"]) in _lines(g["message"]), (i, g["message"])
        else:
            assert g == w, (i, g, w)


# What holds whatever the tasks' interleaving: each element once per epoch ---------------

async def _drain(graph, fetches, timeout=60) -> tuple[list, list]:
    """All the batches a pipeline yields until OutOfRangeError (bounded in time: a
    pipeline that hangs fails the test)."""
    steps = await asyncio.wait_for(_run_pipeline(graph, fetches, max_steps=1000), timeout)
    assert isinstance(steps[-1], dict) and steps[-1]["error"] == "OutOfRangeError"
    return steps[:-1], steps[-1]


async def test_shuffle_batch_of_a_shuffled_slice_producer_sees_each_element_once_per_epoch():
    graph = af.Graph()
    with graph.as_default():
        (x,) = af.train.slice_input_producer([af.constant(np.arange(50))], num_epochs=2,
                                             seed=1, capacity=16)
        out = af.train.shuffle_batch([x], batch_size=7, capacity=30, min_after_dequeue=10,
                                     num_threads=3, seed=2, allow_smaller_final_batch=True)
    batches, _ = await _drain(graph, [out])
    sizes = [b[0]["shape"][0] for b in batches]
    assert sizes == [7] * 14 + [2]
    seen = sorted(v for b in batches for v in b[0]["value"])
    assert seen == sorted(list(range(50)) * 2)


async def test_batch_with_many_threads_keeps_every_element():
    graph = af.Graph()
    with graph.as_default():
        q = af.train.range_input_producer(20, num_epochs=1, shuffle=False)
        i = q.dequeue()
        out = af.train.batch({"i": i, "sq": i * i}, batch_size=6, num_threads=4,
                             allow_smaller_final_batch=True)
    batches, _ = await _drain(graph, [out["i"], out["sq"]])
    assert [b[0]["shape"] for b in batches] == [[6], [6], [6], [2]]
    ids = [v for b in batches for v in b[0]["value"]]
    squares = [v for b in batches for v in b[1]["value"]]
    assert sorted(ids) == list(range(20))
    assert squares == [v * v for v in ids]  # the components of an element stay together


async def test_string_input_producer_feeds_file_reads(tmp_path):
    names = []
    for k in range(3):
        path = tmp_path / f"part-{k}.txt"
        path.write_bytes(f"contents {k}".encode())
        names.append(str(path))
    graph = af.Graph()
    with graph.as_default():
        q = af.train.string_input_producer(names, num_epochs=2, seed=3)
        name = q.dequeue()
        out = af.train.batch([name, af.io.read_file(name)], batch_size=4,
                             allow_smaller_final_batch=True)
    batches, _ = await _drain(graph, out)
    read = [(n, c) for b in batches for n, c in zip(b[0]["value"], b[1]["value"], strict=True)]
    assert len(read) == 6
    assert sorted(n for n, _ in read) == sorted(names * 2)
    assert all(c == f"contents {n[-5]}" for n, c in read)
    first, second = [n for n, _ in read[:3]], [n for n, _ in read[3:]]
    assert sorted(first) == sorted(second) == sorted(names)  # epoch by epoch


async def test_dynamic_pad_pads_each_batch_to_its_longest():
    graph = af.Graph()
    with graph.as_default():
        q = af.train.range_input_producer(7, num_epochs=1, shuffle=False)
        n = q.dequeue()
        seq = af.fill(af.expand_dims(n, 0), n + 1)  # n copies of n + 1
        out = af.train.batch([seq], batch_size=3, dynamic_pad=True,
                             allow_smaller_final_batch=True)  # (one component: a tensor)
    batches, _ = await _drain(graph, [out])
    got = [np.array(b[0]["value"]).reshape(b[0]["shape"]) for b in batches]
    want = []
    for start in range(0, 7, 3):
        rows = list(range(start, min(start + 3, 7)))
        padded = np.zeros((len(rows), max(rows)), np.int32)
        for r, k in enumerate(rows):
            padded[r, :k] = k + 1
        want.append(padded)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


async def test_limit_epochs_counts_in_a_local_variable():
    graph = af.Graph()
    with graph.as_default():
        out = af.train.limit_epochs(af.constant([1.5]), num_epochs=3)
        (epochs,) = af.local_variables()
        assert af.global_variables() == []
    async with af.Session(graph=graph) as sess:
        with graph.as_default():
            await sess.run(af.local_variables_initializer())
        for _ in range(3):
            assert (await sess.run(out)).tolist() == [1.5]
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 3"):
            await sess.run(out)
        assert await sess.run(epochs) == 3
        with graph.as_default():
            await sess.run(af.local_variables_initializer())  # a new count
        assert (await sess.run(out)).tolist() == [1.5]


async def test_an_empty_string_tensor_fails_the_producer_and_the_coordinator_reports_it():
    graph = af.Graph()
    with graph.as_default():
        q = af.train.string_input_producer(af.constant([], af.string), shuffle=False)
        name = q.dequeue()
    async with af.Session(graph=graph) as sess:
        coord = af.train.Coordinator()
        tasks = af.train.start_queue_runners(sess, coord)
        with pytest.raises(errors.OutOfRangeError, match="is closed"):  # by the stop
            await asyncio.wait_for(sess.run(name), 30)
        with pytest.raises(errors.InvalidArgumentError,
                           match="string_input_producer requires a non-null input tensor"):
            await coord.join(tasks, stop_grace_period_secs=10)


# Bad arguments: TF's errors at graph construction ---------------------------------------

def test_bad_arguments_raise_tfs_errors():
    with af.Graph().as_default():
        x = af.constant([1, 2])
        with pytest.raises(ValueError, match="capacity 10 must be bigger than "
                                             "min_after_dequeue 10"):
            af.train.shuffle_batch([x], 2, capacity=10, min_after_dequeue=10)
        with pytest.raises(ValueError, match="num_epochs must be > 0 not 0"):
            af.train.limit_epochs(x, num_epochs=0)
        with pytest.raises(ValueError, match="requires a non-null input tensor"):
            af.train.string_input_producer([])
        with pytest.raises(ValueError, match=r"Expected at least one tensor in batch\(\)"):
            af.train.batch([], 2)
        with pytest.raises(ValueError, match="Cannot infer Tensor's rank"):
            af.train.batch([af.placeholder(af.float32)], 2)
        with pytest.raises(ValueError, match="must have a fully defined shape"):
            af.train.input_producer(af.placeholder(af.float32, [None, None]))
        with pytest.raises(ValueError, match="cannot be a vector when `enqueue_many=False`"):
            af.train.maybe_batch([x], af.constant([True, False]), 2)
        with pytest.raises(ValueError, match="All dictionaries in tensors_list must have"):
            af.train.batch_join([{"a": x}, {"b": x}], 2)
        with pytest.raises(TypeError, match="Expected types to be consistent: int32 vs. "
                                            "float32"):
            af.train.batch_join([[x], [af.constant([1.0])]], 2)
        sparse = af.SparseTensor([[0]], [1.0], [3])
        with pytest.raises(TypeError, match="SparseTensor inputs .* not supported"):
            af.train.batch([sparse], 2)


# TF 2's default GraphDefs (resource variables: ResourceCountUpTo), imported -------------

@pytest.mark.parametrize("program", sorted(FIXTURE["tf2_default"]))
async def test_tf2_default_graph_defs_import_and_run_as_in_tf(program):
    record = FIXTURE["tf2_default"][program]
    graph_def = _graph_def(record)
    assert "ResourceCountUpTo" in {n.op for n in graph_def.node}
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(graph_def, name="")
    fetches = [graph.as_graph_element(n) for n in record["fetch"]]
    got = []
    async with af.Session(graph=graph) as sess:
        await sess.run(graph.as_graph_element(record["init"]))
        for runner in record["runners"]:  # (what a QueueRunner's tasks do, in turn)
            enqueue = [graph.as_graph_element(n) for n in runner["enqueue"]]
            with pytest.raises(errors.OutOfRangeError, match="Reached limit of"):
                for _ in range(tf_programs.MAX_STEPS):
                    await sess.run(enqueue)
            await sess.run(graph.as_graph_element(runner["close"]))
        for _ in range(tf_programs.MAX_STEPS):
            try:
                got.append([_plain(v) for v in await sess.run(fetches)])
            except errors.OutOfRangeError as e:
                got.append({"error": "OutOfRangeError", "message": e.message})
                break
    want = record["steps"]
    assert [g for g in got if isinstance(g, list)] == [w for w in want if isinstance(w, list)]
    assert isinstance(got[-1], dict) and len(got) == len(want)
    assert _tf_error_line(want[-1]["message"]) in _lines(got[-1]["message"])


@pytest.mark.parametrize("name", sorted(FIXTURE["opdefs"]))
def test_new_op_defs_equal_tfs(name):
    want = op_def_pb2.OpDef()
    want.ParseFromString(bytes.fromhex(FIXTURE["opdefs"][name]))
    assert ours(name) == without_docs(want)


async def test_a_resource_variable_counts_up_to_its_limit():
    graph = af.Graph()
    with graph.as_default():
        v = af.Variable(np.int64(5), use_resource=True)
        up = v.count_up_to(7)
        m = af.Variable([1, 2], use_resource=True)
        bad = m.count_up_to(3)
        never = af.Variable(0, use_resource=True, name="never").count_up_to(1)
        init = [v.initializer, m.initializer]
    assert up.op.type == "ResourceCountUpTo" and up.dtype == af.int64 and up.shape == []
    async with af.Session(graph=graph) as sess:
        await sess.run(init)
        assert [int(await sess.run(up)) for _ in range(2)] == [5, 6]
        with pytest.raises(errors.OutOfRangeError, match="Reached limit of 7"):
            await sess.run(up)
        assert await sess.run(v.value()) == 7
        with pytest.raises(errors.InvalidArgumentError, match=r"input is not a scalar: \[2\]"):
            await sess.run(bad)
        with pytest.raises(errors.NotFoundError,
                           match="Resource localhost/never/.* does not exist"):
            await sess.run(never)


# MatchingFiles and match_filenames_once --------------------------------------------------

async def test_matching_files_finds_what_tf_finds(tmp_path):
    for name in tf_programs.MATCH_TREE:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
    root = str(tmp_path)
    graph = af.Graph()
    cases = []
    with graph.as_default():
        for pattern, want in FIXTURE["matching_files"]:
            full = ([f"{root}/{p}" for p in pattern] if isinstance(pattern, list)
                    else f"{root}/{pattern}")
            cases.append((af.io.matching_files(full), want))
        bad = af.io.matching_files(af.placeholder(af.string))
    async with af.Session(graph=graph) as sess:
        got = await sess.run([t for t, _ in cases])
        for value, (_, want) in zip(got, cases, strict=True):
            assert value.shape == (len(want),)
            assert [f.decode()[len(root) + 1:] for f in value] == want
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"must be scalar or vector, but had shape: \[1,1\]"):
            await sess.run(bad, {bad.op.inputs[0]: np.array([[b"x"]], dtype=object)})


async def test_match_filenames_once_feeds_a_producer(tmp_path):
    for k in range(4):
        (tmp_path / f"shard-{k}.txt").write_text(f"line {k}")
    (tmp_path / "other.csv").write_text("no")
    graph = af.Graph()
    with graph.as_default():
        files = af.train.match_filenames_once(str(tmp_path / "shard-*.txt"))
        q = af.train.string_input_producer(files, shuffle=False, num_epochs=1)
        name = q.dequeue()
        contents = af.io.read_file(name)
        assert files in af.local_variables() and files.shape.rank is None
    batches, _ = await _drain(graph, [name, contents])
    assert [(b[0]["value"][0], b[1]["value"][0]) for b in batches] == [
        (str(tmp_path / f"shard-{k}.txt"), f"line {k}") for k in range(4)]


async def test_the_fraction_full_summaries_measure_the_queues():
    graph = af.Graph()
    with graph.as_default():
        rows = af.constant(np.arange(10))
        af.train.batch([rows], batch_size=2, enqueue_many=True)
        af.train.shuffle_batch([rows], batch_size=2, capacity=20, min_after_dequeue=4,
                               enqueue_many=True)
        (batch_runner, shuffle_runner) = graph.get_collection(
            af.train.queue_runner.QUEUE_RUNNERS)
        summaries = graph.get_collection(af.GraphKeys.SUMMARIES)
    assert [s.name for s in summaries] == ["batch/fraction_of_32_full:0",
                                           "shuffle_batch/fraction_over_4_of_16_full:0"]
    tags = ["batch/fraction_of_32_full", "shuffle_batch/fraction_over_4_of_16_full"]

    def values(serialized) -> list[float]:
        out = []
        for tag, blob in zip(tags, serialized, strict=True):
            summary = summary_pb2.Summary()
            summary.ParseFromString(blob)
            (value,) = summary.value
            assert value.tag == tag
            out.append(value.simple_value)
        return out

    async with af.Session(graph=graph) as sess:
        assert values(await sess.run(summaries)) == [0.0, 0.0]
        await sess.run([batch_runner.enqueue_ops[0], shuffle_runner.enqueue_ops[0]])
        assert values(await sess.run(summaries)) == [10 / 32, (10 - 4) / 16]
