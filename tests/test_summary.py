"""af.summary: the v1 builders build TF's graph (names, tags, collections), FileWriter
writes event files laid out as TF 2.21's FileWriter writes them (first event, graph, meta
graph, summaries, run metadata, session logs), TensorBoard's own reader reads them, and
TensorFlow's summary_iterator too (tests/data/check_summary_in_tf.py, run when
AIOFLOW_TF_PYTHON names a Python with TensorFlow). Fixtures: tests/data/
make_summary_fixtures.py."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph

import aioflow as af
from aioflow.framework import errors
from aioflow.lib.record_io import encode_record, read_records
from aioflow.proto import config_pb2, event_pb2, graph_pb2, meta_graph_pb2, summary_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_summary_fixtures  # noqa: E402

FIXTURES = json.loads((DATA / "summary_cases.json").read_text())


def _events(logdir) -> list[event_pb2.Event]:
    (path,) = list(Path(logdir).iterdir())
    return list(af.summary.summary_iterator(path))


# -- builders ------------------------------------------------------------------------------

def test_builders_build_tensorflows_graph():
    want = FIXTURES["builders"]["build_summaries"]
    g = af.Graph()
    with g.as_default():
        make_summary_fixtures.build_summaries(af, af.summary)
    assert_same_graph(g.as_graph_def(),
                      graph_pb2.GraphDef.FromString(bytes.fromhex(want["graph_def"])))
    assert {k: [t.name for t in g.get_collection(k)] for k in want["collections"]} == \
        want["collections"]


def test_text_wants_a_string_tensor():
    with af.Graph().as_default():
        x = af.constant(1.0, name="num")
        with pytest.raises(ValueError, match=re.escape(
                "Expected tensor num:0 to have dtype string, got <dtype: 'float32'>")):
            af.summary.text("t", x)
        with pytest.raises(TypeError, match="expects a string Tensor"):
            af.summary.text("t", "not a tensor")


def test_merge_all_of_an_empty_collection_is_none():
    with af.Graph().as_default():
        assert af.summary.merge_all() is None


# -- FileWriter: TF's layout ---------------------------------------------------------------

def _tf_program(logdir, sync_session) -> bytes:
    """file_writer_events of make_summary_fixtures.py, written by aioflow."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        af.summary.scalar("loss", x)
        merged = af.summary.merge_all()
    writer = af.summary.FileWriter(logdir, graph=g)
    with sync_session(g) as sess:
        meta = af.RunMetadata()
        out = sess.run(merged, {x: 2.0}, options=af.RunOptions(trace_level=3),
                       run_metadata=meta)
    writer.add_summary(out, 3)
    writer.add_summary(out)
    writer.add_run_metadata(meta, "step3", 3)
    writer.add_session_log(af.summary.SessionLog(status=af.summary.SessionLog.START), 5)
    writer.close()
    return g


class _Sync:
    """`with _Sync(g) as sess`: an af.SyncSession closed on exit."""

    def __init__(self, graph):
        self.sess = af.SyncSession(graph=graph)

    def __enter__(self):
        return self.sess

    def __exit__(self, *exc):
        self.sess.close()


def test_file_writer_writes_what_tensorflows_writes(tmp_path):
    before = int(time.time())
    g = _tf_program(tmp_path, _Sync)
    want = FIXTURES["file_writer"]
    (path,) = list(tmp_path.iterdir())
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)", path.name)
    assert m and m.group(2) == socket.gethostname()
    assert want["file_name_pattern"] == "events.out.tfevents.<10 digit seconds>.<hostname>"
    assert before <= int(m.group(1)) <= time.time()
    events = _events(tmp_path)
    assert [e.WhichOneof("what") for e in events] == [e["what"] for e in want["events"]]
    assert [e.step for e in events] == [e["step"] for e in want["events"]]
    assert [float(e.wall_time).is_integer() for e in events[:1]] == [True]
    first = events[0]
    assert first.file_version == want["events"][0]["file_version"] == "brain.Event:2"
    assert first.source_metadata.writer == "aioflow"
    assert all(not e.HasField("source_metadata") for e in events[1:])
    for e, w in zip(events, want["events"], strict=True):
        if "summary" in w:
            assert e.summary.SerializeToString().hex() == w["summary"]
        if "session_log" in w:
            assert e.session_log.SerializeToString().hex() == w["session_log"]
        if "tag" in w:
            assert e.tagged_run_metadata.tag == w["tag"]
    # The graph as TF writes it (shapes included) and a MetaGraphDef around it.
    graph_def = graph_pb2.GraphDef.FromString(events[1].graph_def)
    assert_same_graph(graph_def, graph_pb2.GraphDef.FromString(
        bytes.fromhex(want["events"][1]["graph_def"])))
    meta = meta_graph_pb2.MetaGraphDef.FromString(events[2].meta_graph_def)
    assert meta.graph_def == g.as_graph_def(add_shapes=True)
    assert [n.name for n in meta.meta_info_def.stripped_op_list.op] == [
        "Const", "MergeSummary", "Placeholder", "ScalarSummary"]
    # The traced run's step stats, one NodeExecStats per node that ran.
    run_meta = config_pb2.RunMetadata.FromString(events[5].tagged_run_metadata.run_metadata)
    ran = {n.node_name for d in run_meta.step_stats.dev_stats for n in d.node_stats}
    assert {"loss", "Merge/MergeSummary"} <= ran


def test_add_summary_writes_metadata_once_per_tag(tmp_path):
    meta = summary_pb2.SummaryMetadata()
    meta.plugin_data.plugin_name = "text"
    summary = summary_pb2.Summary()
    summary.value.add(tag="t", metadata=meta).tensor.string_val.append(b"a")
    with af.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(summary, 1)
        writer.add_summary(summary.SerializeToString(), 2)
    assert summary.value[0].HasField("metadata")  # the caller's proto is left alone
    written = [e.summary.value[0] for e in _events(tmp_path)[1:]]
    assert written[0].metadata == meta and not written[1].HasField("metadata")
    assert written[1].tensor.string_val == [b"a"]


def test_file_writer_misuse_raises_tfs_errors(tmp_path):
    writer = af.summary.FileWriter(tmp_path)
    writer.add_run_metadata(af.RunMetadata(), "a")
    with pytest.raises(ValueError, match="The provided tag was already used for this event"):
        writer.add_run_metadata(af.RunMetadata(), "a")
    with pytest.raises(TypeError, match="must be an instance of `Graph` or the deprecated"):
        writer.add_graph(42)
    with pytest.raises(ValueError, match="Please pass only graph, or graph_def"):
        writer.add_graph(af.Graph(), graph_def=graph_pb2.GraphDef())
    with pytest.raises(TypeError, match="meta_graph_def must be type MetaGraphDef"):
        writer.add_meta_graph(graph_pb2.GraphDef())
    with pytest.raises(TypeError, match="summary must be a Summary proto"):
        writer.add_summary(3.0)
    with pytest.raises(NotImplementedError, match="session"):
        af.summary.FileWriter(tmp_path / "other", session=object())
    writer.close()
    writer.add_summary(summary_pb2.Summary(), 9)  # ignored once closed, as TF's
    assert [e.WhichOneof("what") for e in _events(tmp_path)] == ["file_version",
                                                                 "tagged_run_metadata"]


def test_flush_makes_events_visible_and_reopen_starts_a_new_file(tmp_path):
    writer = af.summary.FileWriter(tmp_path / "run", flush_secs=3600)
    writer.add_session_log(event_pb2.SessionLog(status=event_pb2.SessionLog.START), 1)
    writer.flush()
    assert [e.step for e in _events(tmp_path / "run")] == [0, 1]
    writer.close()
    time.sleep(1.05)  # file names are unique per second, as TF's
    writer.reopen()
    writer.add_summary(summary_pb2.Summary(), 2)
    writer.close()
    assert len(list((tmp_path / "run").iterdir())) == 2
    assert writer.get_logdir() == tmp_path / "run"


def test_flush_secs_flushes_without_being_asked(tmp_path):
    writer = af.summary.FileWriter(tmp_path, flush_secs=0.05)
    writer.add_summary(summary_pb2.Summary(), 4)
    deadline = time.monotonic() + 10
    while len(_events(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [e.step for e in _events(tmp_path)] == [0, 4]
    writer.close()


def test_records_are_checked(tmp_path):
    import io

    data = encode_record(b"hello") + encode_record(b"")
    assert list(read_records(io.BytesIO(data))) == [b"hello", b""]
    assert list(read_records(io.BytesIO(data[:-3]))) == [b"hello"]  # a record being written
    bad = bytearray(data)
    bad[13] ^= 1
    with pytest.raises(errors.DataLossError, match="the data's checksum does not match"):
        list(read_records(io.BytesIO(bytes(bad))))
    bad = bytearray(data)
    bad[0] ^= 1
    with pytest.raises(errors.DataLossError, match="the length's checksum does not match"):
        list(read_records(io.BytesIO(bytes(bad))))


# -- a training-like run, read by TensorBoard and by TensorFlow ----------------------------

async def write_run(logdir) -> dict:
    """Three steps of scalar, histogram and text summaries and one traced run's metadata;
    returns what each reader must find."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        loss = af.reduce_mean(x * x, name="loss_value")
        af.summary.scalar("loss", loss)
        af.summary.histogram("activations", x)
        af.summary.text("note", af.strings.join(["step ", af.strings.as_string(af.size(x))]))
        merged = af.summary.merge_all()
    expected = {"scalars": {}, "histograms": {}, "text": {}, "run_metadata": "step1"}
    with af.summary.FileWriter(logdir, graph=g) as writer:
        async with af.Session(graph=g) as sess:
            for step in range(3):
                xs = np.linspace(-1, 1, 4 + step, dtype=np.float32) * (step + 1)
                meta = af.RunMetadata()
                options = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE) \
                    if step == 1 else None
                out = await sess.run(merged, {x: xs}, options=options, run_metadata=meta)
                writer.add_summary(out, step)
                if step == 1:
                    writer.add_run_metadata(meta, "step1", step)
                expected["scalars"][step] = float(np.mean(xs * xs, dtype=np.float32))
                expected["histograms"][step] = (float(xs.min()), float(xs.max()), xs.size,
                                                float(xs.sum(dtype=np.float64)))
                expected["text"][step] = f"step {xs.size}"
    expected["nodes"] = sorted(n.name for n in g.as_graph_def().node)
    return expected


async def test_tensorboard_reads_the_event_files(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing import event_accumulator

    expected = await write_run(tmp_path)
    acc = event_accumulator.EventAccumulator(
        str(tmp_path), size_guidance={event_accumulator.HISTOGRAMS: 0,
                                      event_accumulator.TENSORS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["activations"]
    assert tags["tensors"] == ["note"] and tags["run_metadata"] == ["step1"]
    assert tags["graph"] and tags["meta_graph"]
    assert {e.step: e.value for e in acc.Scalars("loss")} == pytest.approx(
        expected["scalars"], rel=1e-6)
    for e in acc.Histograms("activations"):
        lo, hi, num, total = expected["histograms"][e.step]
        h = e.histogram_value
        assert (h.min, h.max, h.num) == (lo, hi, num) and h.sum == pytest.approx(total)
        assert sum(h.bucket) == num
    texts = {e.step: e.tensor_proto.string_val[0].decode() for e in acc.Tensors("note")}
    assert texts == expected["text"]
    assert sorted(n.name for n in acc.Graph().node) == expected["nodes"]
    stats = acc.RunMetadata("step1").step_stats
    assert "loss_value" in {n.node_name for d in stats.dev_stats for n in d.node_stats}
    # TensorBoard's plugins see their own data classes (the text plugin's metadata kept).
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea

    pacc = pea.EventAccumulator(str(tmp_path))
    pacc.Reload()
    assert set(pacc.PluginTagToContent("text")) == {"note"}
    assert set(pacc.PluginTagToContent("scalars")) == {"loss"}
    assert set(pacc.PluginTagToContent("histograms")) == {"activations"}


async def test_tensorflow_reads_the_event_files(tmp_path):
    tf_python = os.environ.get("AIOFLOW_TF_PYTHON")
    if not tf_python:
        pytest.skip("AIOFLOW_TF_PYTHON (a Python with TensorFlow) not set")
    expected = await write_run(tmp_path / "logs")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"logdir": str(tmp_path / "logs"), "expected": expected}))
    proc = subprocess.run([tf_python, str(DATA / "check_summary_in_tf.py"), str(manifest)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and report["ok"], report
    assert report["events"] == 1 + 2 + 3 + 1  # version, graph + meta graph, 3 steps, metadata


def test_docs_example_runs(tmp_path):
    """docs/tensorboard.md's program, as a user would run it."""
    docs = (Path(__file__).parents[1] / "docs" / "tensorboard.md").read_text()
    (program,) = re.findall(r"```python\n(.*?)```", docs, re.DOTALL)
    (tmp_path / "example.py").write_text(program)
    proc = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "wrote ['file_version', 'graph_def', 'meta_graph_def', 'summary']" in proc.stdout
    events = _events(tmp_path / "logs" / "run1")
    assert [e.step for e in events if e.WhichOneof("what") == "summary"] == list(range(10))
    (tagged,) = [e for e in events if e.WhichOneof("what") == "tagged_run_metadata"]
    assert tagged.tagged_run_metadata.tag == "step5" and tagged.step == 5


def test_file_writer_takes_a_graph_def_too(tmp_path):
    g = af.Graph()
    with g.as_default():
        af.placeholder(af.float32, [2], name="x")
    graph_def = g.as_graph_def()

    class GraphDef:  # another protobuf library's GraphDef (TensorFlow's), by its bytes
        def SerializeToString(self):
            return graph_def.SerializeToString()

    for i, kwargs in enumerate([{"graph_def": graph_def}, {"graph": GraphDef()}]):
        af.summary.FileWriter(tmp_path / str(i), **kwargs).close()
        events = _events(tmp_path / str(i))
        assert [e.WhichOneof("what") for e in events] == [
            "file_version", "graph_def", "meta_graph_def"]
        assert graph_pb2.GraphDef.FromString(events[1].graph_def) == graph_def
        meta = meta_graph_pb2.MetaGraphDef.FromString(events[2].meta_graph_def)
        assert meta.graph_def == graph_def


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    g = af.Graph()
    with g.as_default():
        af.constant(1.0, name="c")
        writer = af.summary.FileWriterCache.get(str(tmp_path))
        assert af.summary.FileWriterCache.get(str(tmp_path)) is writer
    af.summary.FileWriterCache.clear()
    assert af.summary.FileWriterCache.get(str(tmp_path / "other")) is not writer
    af.summary.FileWriterCache.clear()
    events = _events(tmp_path / "other")  # closed by clear(): everything on disk
    assert [e.WhichOneof("what") for e in events][:2] == ["file_version", "graph_def"]
    (path,) = [p for p in tmp_path.iterdir() if p.is_file()]
    graph = graph_pb2.GraphDef.FromString(
        list(af.summary.summary_iterator(path))[1].graph_def)
    assert [n.name for n in graph.node] == ["c"]  # the default graph when it was made
