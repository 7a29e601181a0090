"""Print, PrintV2 and StringFormat (tf.compat.v1.Print, tf.print, tf.strings.format)
against TF 2.21: OpDefs field by field, the text StringFormat makes of tensors of every
dtype, rank and summarize (tests/data/logging_ops_tf.json, written by
tests/data/make_logging_ops_tf.py; text kept as latin-1, a code point per byte), what
Print and tf.print write, and their errors."""

from __future__ import annotations

import json
import logging
import sys

import numpy as np
import pytest
from aioflow.kernels.control_flow import control_flow_kernels
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "logging_ops_tf.json").read_text())
VALUES = [eval(v) for v in TF["values"]]  # noqa: S307 - the fixture's NumPy expressions


def _bytes(text: str) -> bytes:
    return text.encode("latin-1")


@pytest.mark.parametrize("name", ["Print", "PrintV2", "StringFormat"])
def test_op_defs_equal_tf(name):
    want = text_format.Parse(TF["opdefs"][name], op_def_pb2.OpDef())
    assert ours(name) == without_docs(want)


def test_string_format_matches_tf_for_every_value_and_summarize():
    fetches = {}
    with af.Graph().as_default():
        tensors = [af.constant(v) for v in VALUES]
        for s in TF["summarize"]:
            for i, t in enumerate(tensors):
                fetches[f"{i}/{s}"] = af.strings.format("{}", t, summarize=s)
        fetches["template"] = af.strings.format("x={} y={}!", (tensors[8], tensors[0]))
        fetches["placeholder"] = af.strings.format("a %s b %s", (tensors[7], tensors[9]),
                                                   placeholder="%s")
        fetches["no_inputs"] = af.strings.format("plain {{", ())
        with af.SyncSession() as sess:
            got = sess.run(fetches)
    for key, want in TF["format"].items():
        assert got[key] == _bytes(want), key


def test_string_format_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError) as e:
            af.strings.format("{} {}", af.constant(1))
        assert str(e.value) == TF["format_mismatch"]["message"]
        with pytest.raises(ValueError) as e:  # the op itself: its shape function
            apply_op("StringFormat", inputs=[af.constant(1)], template="{} {}")
    assert str(e.value).startswith(TF["raw_format_mismatch"]["message"].split(" for ")[0])


def test_print_writes_first_n_summaries_to_stderr(capfdbinary):
    with af.Graph().as_default():
        x = af.constant(VALUES[1])
        p = af.Print(x, [x, af.constant(VALUES[10]), af.constant(7),
                         af.constant(VALUES[12]), af.constant(VALUES[22])],
                     message="msg: ", first_n=2, summarize=4)
        with af.SyncSession() as sess:
            for _ in range(3):
                passed = sess.run(p)
    np.testing.assert_array_equal(passed, TF["print"]["output"])
    assert capfdbinary.readouterr().err == _bytes(TF["print"]["stderr"])


def test_assert_message_formats_numbers_as_tf():
    with af.Graph().as_default():
        op = af.Assert(False, [af.constant(VALUES[12]), af.constant(VALUES[22])],
                       summarize=8)
        with af.SyncSession() as sess, pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(op)
    assert e.value.message.split("\n")[0] == TF["assert"]["message"]


def test_summarize_value_v1():
    s = control_flow_kernels.summarize_value
    assert s(np.arange(1, 5).reshape(2, 2), 3) == "[1 2][3...]..."
    assert s(np.array(b'a"\n\x01\xff'), 3) == 'a\\"\\n\\001\udcff'


def _tf_print_graph(tmp_path):
    x = af.constant(VALUES[0])
    y = af.constant(VALUES[2])
    path = tmp_path / "printed.txt"
    ops = {
        "stderr": af.print("x:", x, {"b": y, "a": [x, 1]}, ("t", 2.5), summarize=2),
        "stdout": af.print(x, y, sep="|", end=";", output_stream=sys.stdout),
        "file": af.print("to file", x, output_stream=f"file://{path}"),
        "scalar_string": af.print(af.constant("just a string")),
        "braces": af.print("{} and {1}", x),
    }
    return ops, path


@pytest.mark.parametrize("key", ["stderr", "stdout", "file", "scalar_string", "braces"])
def test_tf_print_writes_as_tf(key, capfd, tmp_path):
    with af.Graph().as_default():
        ops, path = _tf_print_graph(tmp_path)
        with af.SyncSession() as sess:
            capfd.readouterr()
            sess.run(ops[key])
            captured = capfd.readouterr()
    want = TF["tf_print"][key]
    assert captured.out == want["stdout"]
    assert captured.err == want["stderr"]
    if key == "file":
        assert path.read_text() == want["file"]


def test_tf_print_appends_to_a_file(tmp_path):
    path = tmp_path / "log.txt"
    with af.Graph().as_default():
        op = af.print("line", af.constant(1), output_stream=f"file://{path}")
        with af.SyncSession() as sess:
            sess.run(op)
            sess.run(op)
    assert path.read_text() == "line 1\nline 1\n"


def test_tf_print_to_a_logging_level(caplog):
    with af.Graph().as_default():
        op = af.print("warned", af.constant([1, 2]), output_stream=logging.warning)
        with af.SyncSession() as sess, caplog.at_level(logging.INFO, logger="aioflow"):
            sess.run(op)
    assert [(r.levelno, r.getMessage()) for r in caplog.records
            if r.name == "aioflow"] == [(logging.WARNING, "warned [1 2]\n")]


def test_tf_print_refuses_an_unknown_stream():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="^Unsupported output stream"):
            af.print("x", output_stream="nowhere")


def test_print_v2_bad_stream_and_input():
    with af.Graph().as_default():
        op = apply_op("PrintV2", name="PrintV2", input="x", output_stream="nowhere")
        with af.SyncSession() as sess, pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(op)
        assert e.value.message.startswith(TF["bad_stream"]["message"])
        with pytest.raises(ValueError) as v:
            apply_op("PrintV2", name="PrintV2", input=af.constant(["a", "b"]))
        assert str(v.value).startswith(TF["not_scalar"]["message"].split(" for ")[0])


async def test_print_runs_inside_an_async_session(capfd):
    with af.Graph().as_default():
        x = af.placeholder(af.float32, [None])
        with af.control_dependencies([af.print("got", x)]):
            y = af.identity(x * 2.0)
        async with af.Session() as sess:
            out = await sess.run(y, {x: [1.0, 2.0]})
    np.testing.assert_array_equal(out, [2.0, 4.0])
    assert capfd.readouterr().err == "got [1 2]\n"


def test_print_v2_appends_to_a_file_off_the_loop():
    """Writing to a file is I/O: the kernel asks for the pool; the streams stay inline."""
    from aioflow.framework.op_kernel import create_kernel
    from aioflow.proto import node_def_pb2

    def kernel(stream):
        node = node_def_pb2.NodeDef(name="p", op="PrintV2")
        node.attr["output_stream"].s = stream.encode()
        node.attr["end"].s = b"\n"
        return create_kernel(node)

    assert kernel("file:///tmp/x.txt").is_expensive([np.array(b"x", object)])
    assert not kernel("stderr").is_expensive([np.array(b"x", object)])
