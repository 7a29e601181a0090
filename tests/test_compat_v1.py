"""aioflow.compat.v1: TF 1.x's module layout over aioflow's objects, blocking sessions with
TF's default-session rules, and docs/api_coverage.md kept current. (TF 1.x programs run
unchanged through it: tests/test_porting_doc.py.)"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.compat import v1 as compat_v1

ROOT = Path(__file__).resolve().parent.parent
TF_NAMES = json.loads((ROOT / "docs" / "data" / "tf_compat_v1_names.json").read_text())["modules"]


def _gen_api_coverage():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        return importlib.import_module("gen_api_coverage")
    finally:
        sys.path.remove(str(ROOT / "docs"))


def test_api_coverage_page_is_current():
    page = (ROOT / "docs" / "api_coverage.md").read_text()
    assert page == _gen_api_coverage().render(), "run python docs/gen_api_coverage.py"


@pytest.mark.parametrize("path", ["nn", "math", "strings", "image", "sparse", "linalg",
                                  "random", "bitwise", "train", "saved_model", "errors",
                                  "dtypes", "io", "initializers", "gfile", "debugging",
                                  "manip", "saved_model.loader", "saved_model.tag_constants",
                                  "saved_model.signature_constants", "io.gfile"])
def test_tf_module_layout(path):
    module = tf
    for part in path.split("."):
        module = getattr(module, part)
    assert module.__name__ == f"aioflow.compat.v1.{path}"
    assert sys.modules[module.__name__] is module  # `import aioflow.compat.v1.nn` works
    assert set(module.__all__) <= set(dir(module))


# TF's module -> the aioflow namespace whose names mean the same at that path.
SAME_MEANING = {"tf": af, "tf.nn": af.nn, "tf.math": af.math, "tf.strings": af.strings,
                "tf.image": af.image, "tf.sparse": af.sparse, "tf.linalg": af.linalg,
                "tf.random": af.random, "tf.bitwise": af.bitwise, "tf.train": af.train,
                "tf.saved_model": af.saved_model, "tf.initializers": af.initializers,
                "tf.errors": af.errors}


@pytest.mark.parametrize("path", sorted(SAME_MEANING))
def test_every_name_aioflow_implements_is_at_tfs_path(path):
    source = SAME_MEANING[path]
    module = _gen_api_coverage()._resolve(tf, path)
    missing = [n for n in TF_NAMES[path] if hasattr(source, n) and not hasattr(module, n)]
    assert missing == []


def test_names_are_aioflow_objects():
    assert tf.placeholder is af.placeholder and tf.nn.relu is af.nn.relu
    assert tf.errors.NotFoundError is af.errors.NotFoundError
    assert tf.float32 is af.float32 and tf.dtypes.float32 is af.float32
    assert tf.segment_sum is af.math.segment_sum  # TF's top-level alias
    assert tf.linalg.transpose is af.matrix_transpose
    assert issubclass(tf.Session, af.SyncSession) and tf.Session is not af.Session


def test_a_missing_optional_module_is_left_out():
    """tf.summary maps to af.summary where that is built; without it compat.v1 loads."""
    assert compat_v1._optional("aioflow.no_such_module") is None
    has_summary = importlib.util.find_spec("aioflow.summary") is not None
    assert hasattr(tf, "summary") == has_summary


def test_with_session_makes_it_and_its_graph_the_defaults():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        y = x * 3.0
        v = tf.Variable([1.0, 2.0], name="v")
        init = tf.global_variables_initializer()
    assert tf.get_default_session() is None
    with tf.Session(graph=graph) as sess:
        assert tf.get_default_session() is sess
        assert tf.get_default_graph() is graph
        np.testing.assert_allclose(y.eval({x: [1.0, 2.0]}), [3.0, 6.0])
        init.run()
        np.testing.assert_allclose(v.eval(), [1.0, 2.0])
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, {x: [0.0, 0.0]})


def test_eval_without_a_default_session_is_tfs_value_error(graph):
    c = af.constant(1.0)
    with pytest.raises(ValueError, match=r"Cannot evaluate tensor using `eval\(\)`: No default "
                                         r"session is registered"):
        c.eval()
    with pytest.raises(ValueError, match=r"Cannot execute operation using `run\(\)`"):
        c.op.run()


def test_eval_in_another_graphs_session_is_refused(graph):
    c = af.constant(1.0)
    with tf.Session(graph=tf.Graph()) as sess:
        with pytest.raises(ValueError, match="graph is different from the session's graph"):
            c.eval(session=sess)


async def test_eval_with_an_awaitable_session_says_await(graph):
    c = af.constant(1.0)
    async with af.Session(graph=graph) as sess:
        with pytest.raises(TypeError, match=r"await sess\.run"):
            c.eval(session=sess)


def test_interactive_session_is_default_until_closed():
    graph = tf.Graph()
    with graph.as_default():
        c = tf.constant([1, 2]) * 2
    sess = tf.InteractiveSession(graph=graph)
    try:
        assert tf.get_default_session() is sess
        assert c.eval().tolist() == [2, 4]
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_saver_blocks_with_a_blocking_session_and_awaits_with_af_session(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        init = tf.global_variables_initializer()
        saver = tf.train.Saver()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        path = saver.save(sess, str(tmp_path / "m"))
    assert path == str(tmp_path / "m") and tf.train.checkpoint_exists(path)

    async def restore():
        async with af.Session(graph=graph) as asess:
            await saver.restore(asess, path)
            return await asess.run(v)

    import asyncio

    np.testing.assert_allclose(asyncio.run(restore()), [1.0, 2.0])


def test_gfile(tmp_path):
    path = tmp_path / "d" / "f.txt"
    tf.gfile.MakeDirs(str(path.parent))
    with tf.gfile.GFile(str(path), "w") as f:
        f.write("hi")
    assert tf.gfile.Exists(str(path)) and tf.io.gfile.exists(str(path))
    with tf.gfile.GFile(str(path), "rb") as f:
        assert f.read() == b"hi"
    assert tf.gfile.ListDirectory(str(path.parent)) == ["f.txt"]
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        tf.gfile.GFile(str(tmp_path / "nope"), "rb")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.gfile.MkDir(str(path.parent))


def test_v2_behaviour_switches_are_no_ops():
    tf.disable_eager_execution()
    tf.disable_v2_behavior()
    assert tf.executing_eagerly() is False
