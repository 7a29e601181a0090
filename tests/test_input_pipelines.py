"""TF 1's queue-based input pipelines (af.train.batch, shuffle_batch, limit_epochs,
input_producer, string/range/slice_input_producer, batch_join, shuffle_batch_join,
maybe_batch) against TensorFlow 2.21 (tests/data/make_input_fixtures_tf.py wrote
input_pipelines_tf.json): each program's GraphDef node for node, its queue runners,
summaries and local variables; then the values a pipeline run by af.train's queue-runner
tasks yields, step by step until OutOfRangeError, equal to what TF's session fetched
(seeded shuffles included: RandomShuffle and RandomShuffleQueue draw TF's Philox
streams). Then properties that hold whatever the timing: every element once per epoch."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2

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
