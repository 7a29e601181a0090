"""Fetch and feed misuse raises what TF 2.21's Python client raises: the same class
(ValueError, TypeError, errors.*) and TF's text (tests/data/tf_client_errors.json, written
by tests/data/capture_tf_client_errors.py from tf.compat.v1.Session.run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors

DATA = Path(__file__).parent / "data"
TF_ERRORS = json.loads((DATA / "tf_client_errors.json").read_text())


def _cases_module():
    """The capture script's build() and cases(), without importing TensorFlow."""
    source = (DATA / "capture_tf_client_errors.py").read_text()
    source = source.replace("import tensorflow as tf\n", "").replace(
        "tf1 = tf.compat.v1\ntf1.disable_eager_execution()\n", "")
    namespace = {"__name__": "capture_cases"}
    exec(compile(source, str(DATA / "capture_tf_client_errors.py"), "exec"), namespace)
    return namespace


CAPTURE = _cases_module()
_TF_TENSOR = re.compile(r'Tensor\("([^"]+)", shape=(\([^)]*\)), dtype=(\w+)\)')


def _as_aioflow_text(message: str) -> str:
    """TF's text with TF's spelling of a Tensor as aioflow spells it."""
    message = message.replace("tf.Tensor", "af.Tensor")
    return _TF_TENSOR.sub(r"<af.Tensor '\1' shape=\2 dtype=\3>", message)


@pytest.fixture(scope="module")
def session_and_tensors():
    graph = af.Graph()
    with graph.as_default():
        tensors = CAPTURE["build"](af)
        graph.prevent_feeding(tensors["y"])
        graph.prevent_fetching(tensors["z"].op)
    sess = af.SyncSession(graph=graph)
    yield sess, tensors
    sess.close()


@pytest.mark.parametrize("label", sorted(TF_ERRORS))
def test_misuse_raises_tf_class_and_text(label, session_and_tensors):
    sess, tensors = session_and_tensors
    fetches, feeds = CAPTURE["cases"](tensors)[label]
    expected = TF_ERRORS[label]
    with pytest.raises(Exception) as info:  # noqa: PT011 - the class is checked below
        sess.run(fetches, feeds)
    error = info.value
    assert type(error).__name__ == expected["class"], (label, error)
    for base in expected["bases"]:  # e.g. InaccessibleTensorError is a ValueError
        assert base in {c.__name__ for c in type(error).__mro__}, (label, base)
    message = str(error)
    if isinstance(error, errors.OpError):  # TF's runtime line, in aioflow's fuller text
        assert expected["message"] in message, (label, message)
    else:  # TF's text, then perhaps which tensor was fed
        assert message.startswith(_as_aioflow_text(expected["message"])), (label, message)
    assert len(message) < 600, (label, len(message))


def test_a_huge_string_feed_gives_a_short_message(session_and_tensors):
    """The trap: a 1000x64 list of strings fed to a float placeholder printed the whole
    value (322,093 characters); TF's message is NumPy's, a few dozen."""
    sess, tensors = session_and_tensors
    with pytest.raises(ValueError, match=r"could not convert string to float") as info:
        sess.run(tensors["y"], {tensors["x"]: [["a" * 100] * 64] * 1000})
    assert len(str(info.value)) < 400
    assert "x:0" in str(info.value)  # names the tensor being fed


def test_feed_errors_come_before_fetch_errors(session_and_tensors):
    """TF's client checks the feeds first, then the fetches."""
    sess, tensors = session_and_tensors
    with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
        sess.run("nope:0", {"nope:0": 1.0})


def test_values_quoted_in_messages_are_summarized_as_numpy_does():
    from aioflow.framework.value_repr import summarize

    assert summarize(list(range(5))) == "[0, 1, 2, 3, 4]"
    big = summarize([["a"] * 64] * 1000)
    assert len(big) < 400 and "..." in big
    assert summarize(np.arange(10000)) == np.array_repr(np.arange(10000))
    assert len(summarize("x" * 100000)) < 400
    assert len(summarize(10 ** 5000)) < 400


@pytest.mark.parametrize("build", [
    lambda big: af.placeholder(af.float32, shape=big),
    lambda big: af.nn.conv2d(af.placeholder(af.float32, [1, 4, 4, 1]),
                             af.placeholder(af.float32, [1, 1, 1, 1]), strides=big,
                             padding="SAME"),
    lambda big: af.strings.regex_replace(af.constant("a"), big, "b"),
], ids=["shape", "strides", "pattern"])
def test_builder_errors_quoting_a_huge_value_stay_short(build, graph):
    big = [["a" * 10] * 64] * 1000
    with pytest.raises((TypeError, ValueError)) as info:
        build(big)
    assert len(str(info.value)) < 600
