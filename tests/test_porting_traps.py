"""The traps a TF 1.x user met porting to aioflow (issue #15), each reproduced and then
removed: `with af.Session()`, TF's GraphDef objects, several unknown ops in one import,
attrs from a newer TF, exported builders without kernels, KeyboardInterrupt around a
blocking run. "TF:" notes say what TF 2.21 does (checked against it)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors, op_def_registry, op_kernel

ROOT = Path(__file__).resolve().parent.parent


def _small_graph_def():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        y = af.add(x, 1.0, name="y")
        af.identity(y, name="z")
    return g.as_graph_def()


def _run_imported(graph_def, feeds=None):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    with af.SyncSession(graph=g) as sess:
        return sess.run("z:0", feeds or {"x:0": [1.0, 2.0]})


# -- `with af.Session()` -------------------------------------------------------------------

def test_plain_with_session_says_async_with_or_sync_session(graph):
    with pytest.raises(TypeError, match=r"async with af\.Session.*af\.SyncSession"):
        with af.Session(graph=graph):
            pass


async def test_async_with_session_still_works(graph):
    c = af.constant(2.0)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(c) == 2.0


# -- GraphDef-like objects ------------------------------------------------------------------

class ForeignProto:
    """Stands for a TensorFlow protobuf class (GraphDef, MetaGraphDef): same wire format
    (tests/data/check_tf_graph_def_import.py imports a real one)."""

    def __init__(self, data: bytes):
        self._data = data

    def SerializeToString(self, deterministic=None):  # noqa: N802 - protobuf's name
        return self._data


def test_import_graph_def_accepts_a_foreign_graph_def_object():
    foreign = ForeignProto(_small_graph_def().SerializeToString())
    np.testing.assert_allclose(_run_imported(foreign), [2.0, 3.0])


def test_import_graph_def_still_refuses_what_is_not_a_graph_def():
    with af.Graph().as_default():
        with pytest.raises(TypeError, match="graph_def must be a GraphDef proto, not int"):
            af.import_graph_def(3)
        with pytest.raises(ValueError, match="Unable to parse GraphDef"):
            af.import_graph_def(ForeignProto(b"\x0a\x05garbage"))


def test_import_meta_graph_accepts_a_foreign_meta_graph_def_object():
    """A MetaGraphDef of another protobuf class (TF's tf.compat.v1.MetaGraphDef): the TF-
    written one of tests/data/saver_tf, passed as such an object, imports with its Saver."""
    data = (ROOT / "tests" / "data" / "saver_tf" / "model.ckpt-7.meta").read_bytes()
    with af.Graph().as_default():
        saver = af.train.import_meta_graph(ForeignProto(data))
        assert [v.name for v in af.global_variables()] == ["a:0", "sc/b:0", "step:0", "s:0"]
    assert saver is not None


# -- unknown ops, unknown attrs -------------------------------------------------------------

def test_import_lists_every_unknown_op_at_once():
    graph_def = _small_graph_def()
    ops_by_name = {n.name: n for n in graph_def.node}
    ops_by_name["x"].op = "FooOp"
    ops_by_name["y"].op = "BarOp"
    ops_by_name["z"].op = "FooOp"
    with af.Graph().as_default():
        # TF: NotFoundError "Op type not registered 'FooOp' in binary running ..." (the first)
        with pytest.raises(errors.NotFoundError) as info:
            af.import_graph_def(graph_def)
    message = str(info.value)
    assert message.startswith("Op type not registered 'BarOp' (node y), 'FooOp' (nodes x, z) "
                              "in binary running aioflow.")
    assert "docs/op_coverage.md" in message


def test_unknown_attr_on_a_known_op_is_ignored_with_a_warning_as_tf():
    """TF 2.21 (node_def_util.cc ValidateNodeDef) logs "NodeDef mentions attribute new_attr
    which is not in the op definition ... Unknown attributes will be ignored." and runs."""
    graph_def = _small_graph_def()
    y = next(n for n in graph_def.node if n.name == "y")
    y.attr["new_attr"].i = 5
    with pytest.warns(UserWarning, match=r"NodeDef mentions attribute new_attr which is not in "
                                         r"the op definition: Op<name=AddV2.*Unknown attributes "
                                         r"will be ignored. NodeDef: \{\{node y\}\}"):
        np.testing.assert_allclose(_run_imported(graph_def), [2.0, 3.0])


def test_internal_attrs_pass_without_a_warning():
    graph_def = _small_graph_def()
    graph_def.node[1].attr["_foo"].i = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(_run_imported(graph_def), [2.0, 3.0])


def test_a_known_attr_with_a_bad_value_is_still_refused_as_tf():
    """TF refuses a value outside the OpDef's allowed list (ValueError from the import)."""
    graph_def = _small_graph_def()
    y = next(n for n in graph_def.node if n.name == "y")
    y.attr["T"].type = af.string.as_datatype_enum
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="not in the list of allowed values"):
            af.import_graph_def(graph_def)


# -- every exported builder has a kernel ----------------------------------------------------

def _op_types_named_by_builders() -> dict[str, str]:
    """Op type -> builder module, for every call in aioflow/ops/*.py whose first argument is
    a string naming a registered op (apply_op("Lgamma", ...), _unary("Lgamma", ...))."""
    found = {}
    for path in sorted((ROOT / "aioflow" / "ops").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                    op_def_registry.get_registration(first.value) is not None:
                found.setdefault(first.value, path.name)
    return found


#: Ops without a kernel of their own, as in TF: a pass rewrites them before they run (into
#: ops that must have kernels).
REWRITTEN_BEFORE_RUN = {"ParallelConcat": ("_ParallelConcatStart", "_ParallelConcatUpdate")}


def test_every_op_an_exported_builder_creates_has_a_cpu_kernel():
    import aioflow.runtime.kernel_library as kernel_library

    kernel_library.load_builtin_kernels()
    found = _op_types_named_by_builders()
    assert {"Lgamma", "Digamma", "Xdivy", "Xlogy", "MatMul"} <= set(found)
    kernels = op_kernel.registered_kernels()
    needed = set(found) - set(REWRITTEN_BEFORE_RUN)
    needed |= {op for op in found if op in REWRITTEN_BEFORE_RUN
               for op in REWRITTEN_BEFORE_RUN[op]}
    missing = sorted(f"{op} ({found.get(op, 'a rewrite')})" for op in needed
                     if (op, "CPU") not in kernels)
    assert missing == []


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_lgamma_and_digamma_run(graph, name):
    from math import lgamma

    x = np.array([0.5, 1.0, 2.5, 10.0], np.float64)
    y = getattr(af, name)(af.constant(x))
    with af.SyncSession(graph=graph) as sess:
        out = sess.run(y)
    if name == "lgamma":
        np.testing.assert_allclose(out, [lgamma(v) for v in x], rtol=1e-12, atol=1e-14)
    else:  # psi(1) = -gamma (Euler), psi(x + 1) = psi(x) + 1/x
        np.testing.assert_allclose(out[1], -0.5772156649015329, rtol=1e-12)
        np.testing.assert_allclose(out[3] - out[2] > 0, True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_xdivy_and_xlogy_follow_tf(graph, dtype):
    """TF: xdivy(x, y) = 0 where x == 0 else x / y; xlogy(x, y) = 0 where x == 0 else
    x * log(y) (0 even for y = 0, inf or nan)."""
    x = np.array([0, 0, 0, 2, -3, 1.5], dtype)
    y = np.array([0, np.inf, np.nan, 4, 0.5, 0], dtype)
    a, b = af.constant(x), af.constant(y)
    ops = [af.math.xdivy(a, b), af.math.xlogy(a, b), af.math.xlog1py(a, b)]
    with af.SyncSession(graph=graph) as sess:
        xdivy, xlogy, xlog1py = sess.run(ops)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(xdivy, np.where(x == 0, 0, x / y), rtol=1e-6)
        np.testing.assert_allclose(xlogy, np.where(x == 0, 0, x * np.log(y)), rtol=1e-6)
        np.testing.assert_allclose(xlog1py, np.where(x == 0, 0, x * np.log1p(y)), rtol=1e-6)
    assert xdivy.dtype == dtype and xlogy.dtype == dtype


# -- KeyboardInterrupt around a blocking run ------------------------------------------------
# Each case runs in a fresh Python with Python's own SIGINT handler, as a REPL has: the
# test process's signal state is not the user's (a suite started in the background by a
# shell runs with SIGINT ignored, and so would every Python it starts).

_INTERRUPT_PROGRAM = """
import json, os, signal, sys, threading, time
import numpy as np
import aioflow as af

# Ctrl-C raises KeyboardInterrupt, as in a REPL (a Python started in the background by a
# shell inherits SIGINT ignored, and keeps it so).
signal.signal(signal.SIGINT, signal.default_int_handler)
mode = sys.argv[1]
calls = []

def tick(i):
    calls.append(int(i))
    time.sleep(0.002)
    return np.int32(i)

g = af.Graph()
with g.as_default():
    result = af.while_loop(
        lambda i: i < 100_000,
        lambda i: af.reshape(af.py_func(tick, [i], af.int32), []) + 1, [af.constant(0)])
    quick = af.constant(7.0)
sess = af.SyncSession(graph=g)
sess.run(quick)  # built and warm: the interrupt lands in the long run
if mode == "process":  # the OS picks the thread (usually the main one)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
else:  # delivered to another thread: the main one must still wake for it
    timer = threading.Timer(
        0.5, lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT))
started = time.monotonic()
timer.start()
interrupted = False
try:
    sess.run(result)
except KeyboardInterrupt:
    interrupted = True
elapsed = time.monotonic() - started
timer.join()
stopped_at = len(calls)
time.sleep(0.3)
print(json.dumps({"interrupted": interrupted, "elapsed": elapsed, "stopped_at": stopped_at,
                  "after": len(calls), "quick": float(sess.run(quick))}))
sess.close()
"""


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_keyboard_interrupt_cancels_the_sync_run_before_reraising(mode):
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_PROGRAM, mode],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["interrupted"]  # KeyboardInterrupt reached the caller
    assert report["elapsed"] < 5.0  # at once, not after the loop's 200 s
    assert 0 < report["stopped_at"] < 100_000
    assert report["after"] == report["stopped_at"]  # no work continued after the interrupt
    assert report["quick"] == 7.0  # the session is still usable


def test_a_real_tensorflow_graph_def_object_imports():
    """TF's own GraphDef class (not bytes): tests/data/check_tf_graph_def_import.py, in a
    Python with TensorFlow (AIOFLOW_TF_PYTHON), imports it into this aioflow and runs it to
    TF's values."""
    tf_python = os.environ.get("AIOFLOW_TF_PYTHON")
    if not tf_python:
        pytest.skip("AIOFLOW_TF_PYTHON (a Python with TensorFlow) not set")
    import subprocess

    proc = subprocess.run(
        [tf_python, str(ROOT / "tests" / "data" / "check_tf_graph_def_import.py")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok: aioflow imported TF's GraphDef object" in proc.stdout
