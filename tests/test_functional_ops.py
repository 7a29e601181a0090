"""af.map_fn, af.scan, af.foldl and af.foldr: results against NumPy (shapes, dtypes, nested
structures, reverse, initializers, fns with conds and reductions), static shapes, errors,
and against TensorFlow 2.21 (tests/data/make_functional_ops_tf.py): TF's GraphDefs run here
to TF's values, and the same programs built with af are node for node TF's GraphDefs."""

from __future__ import annotations

import collections
import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.nest import assert_same_structure
from aioflow.framework.tensor_spec import TensorSpec

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_functional_ops_tf as tf_programs  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

MANIFEST = json.loads((DATA / "functional_ops_tf.json").read_text())
FIXTURES = sorted(k for k in MANIFEST if k.startswith("functional_"))
_NO_JPEG = pytest.mark.skipif(importlib.util.find_spec("simplejpeg") is None,
                              reason="JPEG decoding needs the 'image' extra (simplejpeg)")
VALUE_FIXTURES = [pytest.param(k, marks=_NO_JPEG) if "jpeg" in k else k
                  for k in FIXTURES if "errors" not in MANIFEST[k]]


async def _run(graph, fetches, feeds=None):
    return await af.Session(graph=graph).run(fetches, feeds or {})


def _build(fn):
    """(graph, fn()) with the graph the default while fn builds."""
    graph = af.Graph()
    with graph.as_default():
        return graph, fn()


def _tf_arrays(name: str) -> dict[str, np.ndarray]:
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _assert_tf_value(mine, ref: np.ndarray) -> None:
    mine = np.asarray(mine)
    if ref.dtype.kind == "S":  # strings were saved as fixed-width bytes
        assert mine.shape == ref.shape
        assert mine.tolist() == ref.tolist()
        return
    assert mine.dtype == ref.dtype and mine.shape == ref.shape
    np.testing.assert_array_equal(mine, ref)


# -- against TensorFlow 2.21 -------------------------------------------------------------------

def _program(name: str):
    return getattr(tf_programs, MANIFEST[name]["program"])


@pytest.mark.parametrize("name", FIXTURES)
def test_builder_is_tf_graph_node_for_node(name, load_graph_def):
    graph, (fetches, _) = _build(lambda: _program(name)(af))
    ref = load_graph_def(name)
    assert [t.name for t in fetches] == MANIFEST[name]["fetches"]
    assert sorted({op.type for op in graph.get_operations()}) == MANIFEST[name]["ops"]
    assert_same_graph(graph.as_graph_def(), ref)
    assert len(graph.get_operations()) == MANIFEST[name]["num_nodes"]


def test_main_structure_names():
    """The node names a user sees in TF's map_fn graphs, stated outright."""
    graph, (fetches, _) = _build(lambda: tf_programs.program_map_basic(af))
    names = {op.name for op in graph.get_operations()}
    assert fetches[0].name == "map/TensorArrayStack/TensorArrayGatherV3:0"
    assert fetches[2].name == "squares/TensorArrayStack/TensorArrayGatherV3:0"
    for expected in ["map/TensorArray", "map/TensorArray_1",
                     "map/TensorArrayUnstack/TensorArrayScatter/TensorArrayScatterV3",
                     "map/while/maximum_iterations", "map/while/LoopCond",
                     "map/while/TensorArrayReadV3",
                     "map/while/TensorArrayWrite/TensorArrayWriteV3", "map/while/Exit_2",
                     "map_1/while/Enter", "squares/while/NextIteration_2"]:
        assert expected in names, expected
    enter = graph.get_operation_by_name("map/while/Enter")
    assert enter.get_attr("frame_name") == b"map/while/while_context"
    assert enter.get_attr("parallel_iterations") == 10


@pytest.mark.parametrize("name", VALUE_FIXTURES)
async def test_tf_graph_runs_to_tf_values(name, load_graph_def):
    arrays = _tf_arrays(name)
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(load_graph_def(name), name="")
    feeds = {graph.get_tensor_by_name(k): arrays[f"feed:{k}"] for k in MANIFEST[name]["feeds"]}
    fetches = [graph.get_tensor_by_name(k) for k in MANIFEST[name]["fetches"]]
    values = await _run(graph, fetches, feeds)
    for t, v in zip(fetches, values, strict=True):
        _assert_tf_value(v, arrays[f"fetch:{t.name}"])


@pytest.mark.parametrize("name", VALUE_FIXTURES)
async def test_af_built_graph_runs_to_tf_values(name):
    arrays = _tf_arrays(name)
    graph, (fetches, _) = _build(lambda: _program(name)(af))
    feeds = {graph.get_tensor_by_name(k): arrays[f"feed:{k}"] for k in MANIFEST[name]["feeds"]}
    values = await _run(graph, fetches, feeds)
    for t, v in zip(fetches, values, strict=True):
        _assert_tf_value(v, arrays[f"fetch:{t.name}"])


def _without_runtime_id(message: str) -> str:
    """A TensorArray's runtime name ends in a process-wide counter ("TensorArray_1_60");
    the counter is dropped, the name kept."""
    return re.sub(r"^(TensorArray \S+?)_\d+:", r"\1:", message)


@pytest.mark.parametrize("built", [False, True], ids=["tf_graph", "af_built"])
@pytest.mark.parametrize("fetch", sorted(MANIFEST["functional_errors"]["errors"]))
async def test_runtime_errors_are_tf(fetch, built, load_graph_def):
    """A fn result of the wrong dtype, a fold or scan without initializer over zero
    elements, and fn results of different shapes fail in TF's node with TF's error class
    and message (in TF's GraphDef and in the one af builds)."""
    error_class, node, message = MANIFEST["functional_errors"]["errors"][fetch]
    arrays = _tf_arrays("functional_errors")
    if built:
        graph, _ = _build(lambda: tf_programs.program_errors(af))
    else:
        graph = af.Graph()
        with graph.as_default():
            af.import_graph_def(load_graph_def("functional_errors"), name="")
    feeds = {graph.get_tensor_by_name(k): arrays[f"feed:{k}"]
             for k in MANIFEST["functional_errors"]["feeds"]}
    with pytest.raises(getattr(errors, error_class)) as info:
        await _run(graph, graph.get_tensor_by_name(fetch), feeds)
    assert info.value.node_name == node
    assert (_without_runtime_id(info.value.message.splitlines()[0])
            == _without_runtime_id(message))


@pytest.mark.parametrize("index", range(len(tf_programs.nest_cases())))
def test_structure_errors_are_tf_nest(index):
    """Structure mismatches (map_fn's dtype, scan's accumulators, while_loop's body) raise
    tf.nest's error class and message, byte for byte on Python leaves."""
    a, b = tf_programs.nest_cases()[index]
    error_class, message = MANIFEST["nest_errors"][index]
    with pytest.raises((TypeError, ValueError)) as info:
        assert_same_structure(a, b)
    assert type(info.value).__name__ == error_class
    assert str(info.value) == message


# -- map_fn against NumPy ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [((5,), np.float32), ((4, 3), np.float64),
                                         ((2, 3, 4), np.int32), ((6, 1), np.int64),
                                         ((1, 2, 2), np.float16)])
@pytest.mark.parametrize("static", [True, False])
async def test_map_fn_numpy(shape, dtype, static):
    rng = np.random.default_rng(7)
    value = (rng.standard_normal(shape) * 10).astype(dtype)

    def build():
        x = af.placeholder(af.as_dtype(dtype), shape if static else [None] + list(shape[1:]))
        return x, af.map_fn(lambda e: e * e + e, x), af.map_fn(af.reduce_sum, x)

    graph, (x, squares, sums) = _build(build)
    assert squares.shape.as_list() == ([shape[0]] if static else [None]) + list(shape[1:])
    assert sums.shape.as_list() == [shape[0] if static else None]
    got_squares, got_sums = await _run(graph, [squares, sums], {x: value})
    assert got_squares.dtype == dtype and got_sums.dtype == dtype
    np.testing.assert_array_equal(got_squares, np.stack([e * e + e for e in value]))
    np.testing.assert_allclose(got_sums, np.stack([e.sum(dtype=dtype) for e in value]),
                               rtol=1e-3 if dtype == np.float16 else 1e-6)


async def test_map_fn_dtype_differs_and_nested():
    point = collections.namedtuple("point", "x y")
    a = np.array([[0.5, 1.5], [2.25, -3.5], [7.0, 0.0]], np.float32)
    b = np.array([1, 2, 3], np.int64)

    def build():
        floats = af.constant(a)
        ints = af.constant(b)
        to_int = af.map_fn(lambda e: af.cast(af.floor(e), af.int32), floats, dtype=af.int32)
        named = af.map_fn(lambda p: point(p.x * af.cast(p.y, af.float32), p.y * p.y),
                          point(floats, ints))
        listed = af.map_fn(lambda e: [af.reduce_max(e[0]), e[1] > 1], [floats, ints],
                           dtype=[af.float32, af.bool])
        dicted = af.map_fn(lambda d: {"n": af.size(d["v"]), "m": d["v"][0]},
                           {"v": floats}, dtype={"n": af.int32, "m": af.float32})
        return to_int, named, listed, dicted

    graph, (to_int, named, listed, dicted) = _build(build)
    assert isinstance(named, point) and isinstance(listed, list) and set(dicted) == {"n", "m"}
    assert to_int.dtype == af.int32 and listed[1].dtype == af.bool
    got = await _run(graph, [to_int, named.x, named.y, listed[0], listed[1], dicted["n"],
                             dicted["m"]])
    np.testing.assert_array_equal(got[0], np.floor(a).astype(np.int32))
    np.testing.assert_array_equal(got[1], a * b[:, None].astype(np.float32))
    np.testing.assert_array_equal(got[2], b * b)
    np.testing.assert_array_equal(got[3], a.max(axis=1))
    np.testing.assert_array_equal(got[4], b > 1)
    np.testing.assert_array_equal(got[5], np.full(3, 2, np.int32))
    np.testing.assert_array_equal(got[6], a[:, 0])


async def test_map_fn_strings_to_lengths_and_decoded():
    words = [b"", b"x", b"hello world", b"\x00\x01\x02 bytes", "\u00e9t\u00e9".encode()]

    def build():
        s = af.placeholder(af.string, [None], name="s")
        lengths = af.map_fn(af.strings.length, s, dtype=af.int32)
        chars = af.map_fn(lambda e: af.strings.length(e, unit="UTF8_CHAR"), s,
                          fn_output_signature=af.int32)
        upper = af.map_fn(lambda e: af.strings.join([e, e], separator=b"|"), s)
        return s, lengths, chars, upper

    graph, (s, lengths, chars, upper) = _build(build)
    assert lengths.dtype == af.int32 and upper.dtype == af.string
    got = await _run(graph, [lengths, chars, upper], {s: np.array(words, dtype=object)})
    assert got[0].tolist() == [len(w) for w in words]
    assert got[1].tolist() == [len(w.decode()) for w in words]
    assert list(got[2]) == [w + b"|" + w for w in words]


async def test_map_fn_with_cond_and_reduction():
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 0.5, -0.5], [2.0, 2.0, -5.0], [0.0, 0.0, 0.0]],
                 np.float32)

    def fn(e):
        total = af.reduce_sum(e)
        return af.cond(total > 0.0, lambda: e / total, lambda: af.zeros_like(e) - total)

    graph, out = _build(lambda: af.map_fn(fn, af.constant(x), parallel_iterations=1))
    expected = np.stack([e / e.sum() if e.sum() > 0 else np.zeros_like(e) - e.sum()
                         for e in x])
    np.testing.assert_allclose(await _run(graph, out), expected, rtol=1e-6)
    enters = [op for op in graph.get_operations() if op.type == "Enter"]
    assert enters and all(op.get_attr("parallel_iterations") == 1 for op in enters)


async def test_map_fn_nested_map():
    """A map_fn inside map_fn's fn: a while loop inside a while loop."""
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

    def build():
        return af.map_fn(lambda m: af.map_fn(lambda row: af.reduce_max(row) - row, m),
                         af.constant(x))

    graph, out = _build(build)
    assert out.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(await _run(graph, out),
                                  x.max(axis=2, keepdims=True) - x)


@pytest.mark.parametrize("take_map", [True, False])
async def test_inside_cond_and_while(take_map):
    """The fixture program in_control_flow with both branches taken, against NumPy."""
    x = np.array([[1.0, -2.0], [0.5, 3.0], [4.0, 0.25]], np.float32)
    graph, (fetches, _) = _build(lambda: tf_programs.program_in_control_flow(af))
    feeds = {graph.get_tensor_by_name("x:0"): x, graph.get_tensor_by_name("p:0"): take_map}
    branch, looped, inner = await _run(graph, fetches, feeds)
    np.testing.assert_array_equal(branch, x * 2.0 if take_map else np.cumsum(x, axis=0))
    np.testing.assert_allclose(looped, sum(x[0] + (x[1:] * i).sum(axis=0) for i in range(3)),
                               rtol=1e-6)
    np.testing.assert_array_equal(inner, x * x + 1.0)


def test_static_shapes_from_signature_and_infer_shape():
    """As TF 2.21: the fn's static shape is inferred unless infer_shape=False, which
    leaves the result's shape unknown (even its rank, even with a static n)."""
    def build():
        x = af.placeholder(af.float32, [None, 3])
        fixed = af.placeholder(af.float32, [4, 3])
        return [af.map_fn(lambda e: e[:2], x, fn_output_signature=TensorSpec([2], af.float32)),
                af.map_fn(lambda e: e[:2], x),
                af.map_fn(lambda e: e[:2], x, infer_shape=False),
                af.map_fn(lambda e: e[:2], fixed, infer_shape=False),
                af.scan(lambda a, e: a + e, fixed, infer_shape=False),
                af.scan(lambda a, e: a + e, fixed)]

    _, results = _build(build)
    assert [r.shape.as_list() if r.shape.rank is not None else None for r in results] == [
        [None, 2], [None, 2], None, None, None, [4, 3]]


def test_map_fn_errors():
    def build():
        x = af.constant(np.ones((3, 2), np.float32))
        with pytest.raises(ValueError, match=r"^elems must be a Tensor or \(possibly nested\) "
                           r"sequence of Tensors. Got \[\], which does not contain any "
                           r"Tensors.$"):
            af.map_fn(lambda e: e, [])
        with pytest.raises(ValueError, match="Got {}, which"):
            af.map_fn(lambda e: e, {})
        with pytest.raises(ValueError, match="^Elements in elems must be 1\\+ dimensional "
                           "Tensors, not scalars$"):
            af.map_fn(lambda e: e, af.constant(1.0))
        with pytest.raises(ValueError, match="^Dimensions 3 and 2 are not compatible$"):
            af.map_fn(lambda e: e[0], (x, af.constant([1, 2])))
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            af.map_fn(lambda e: (e, e), x, dtype=af.float32)
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            af.map_fn(lambda e: (e, e), x)
        with pytest.raises(TypeError, match="don't have the same sequence type"):
            af.map_fn(lambda e: [e, e], x, dtype=(af.float32, af.float32))
        with pytest.raises(ValueError, match="don't have the same number of elements"):
            af.map_fn(lambda e: (e, e, e), x, dtype=(af.float32, af.float32))
        with pytest.raises(TypeError, match="is not callable"):
            af.map_fn(x, x)

    _build(build)


# -- scan against NumPy -----------------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [((6,), np.float64), ((4, 3), np.float32),
                                         ((3, 2, 2), np.int32), ((1, 5), np.int64)])
@pytest.mark.parametrize("reverse", [False, True])
async def test_scan_cumsum_numpy(shape, dtype, reverse):
    value = np.arange(np.prod(shape), dtype=dtype).reshape(shape) - 4
    init = np.full(shape[1:], 3, dtype=dtype)

    def build():
        x = af.placeholder(af.as_dtype(dtype), [None] + list(shape[1:]))
        plain = af.scan(lambda a, e: a + e, x, reverse=reverse)
        given = af.scan(lambda a, e: a * 2 - e, x, initializer=af.constant(init),
                        reverse=reverse)
        return x, plain, given

    graph, (x, plain, given) = _build(build)
    got_plain, got_given = await _run(graph, [plain, given], {x: value})
    rows = value[::-1] if reverse else value
    expected_plain = np.cumsum(rows, axis=0, dtype=dtype)
    acc, expected_given = init, []
    for e in rows:
        acc = acc * 2 - e
        expected_given.append(acc)
    expected_given = np.stack(expected_given)
    if reverse:
        expected_plain, expected_given = expected_plain[::-1], expected_given[::-1]
    assert got_plain.dtype == dtype and got_given.dtype == dtype
    np.testing.assert_array_equal(got_plain, expected_plain)
    np.testing.assert_array_equal(got_given, expected_given)


async def test_scan_nested_accumulators_and_elems():
    xs = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    ks = np.array([2, 0, 1, 3, 1], np.int32)

    def build():
        elems = {"x": af.constant(xs), "k": af.constant(ks)}
        fib = af.scan(lambda a, _: (a[1], a[0] + a[1]), af.constant(xs),
                      initializer=(af.constant(0), af.constant(1)))
        mixed = af.scan(lambda a, e: {"x": a["x"] * e["x"], "k": a["k"] + e["k"]}, elems)
        return fib, mixed

    graph, (fib, mixed) = _build(build)
    assert isinstance(fib, tuple) and set(mixed) == {"k", "x"}
    assert fib[0].shape.as_list() == [5] and mixed["x"].shape.as_list() == [5]
    got = await _run(graph, [fib[0], fib[1], mixed["x"], mixed["k"]])
    np.testing.assert_array_equal(got[0], [1, 1, 2, 3, 5])
    np.testing.assert_array_equal(got[1], [1, 2, 3, 5, 8])
    np.testing.assert_array_equal(got[2], np.cumprod(xs))
    np.testing.assert_array_equal(got[3], np.cumsum(ks))


async def test_scan_with_cond_and_different_accumulator_dtype():
    x = np.array([3.0, -1.0, 4.0, -1.5, 9.0, -2.0], np.float32)

    def fn(count, e):
        return af.cond(e > 0.0, lambda: count + 1, lambda: count)

    graph, out = _build(lambda: af.scan(fn, af.constant(x), initializer=af.constant(0)))
    assert out.dtype == af.int32
    np.testing.assert_array_equal(await _run(graph, out), np.cumsum(x > 0))


def test_scan_errors():
    def build():
        x = af.constant(np.ones((3, 2), np.float32))
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            af.scan(lambda a, e: (a, e), x)
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            af.scan(lambda a, e: a[0], x, initializer=(af.zeros([2]), af.zeros([2])))
        with pytest.raises(IndexError, match="1\\+ dimensional"):
            af.scan(lambda a, e: a + e, af.constant(1.0))
        with pytest.raises(IndexError, match="at least one Tensor"):
            af.scan(lambda a, e: a, [])
        with pytest.raises(TypeError, match="is not callable"):
            af.scan(3, x)

    _build(build)


# -- foldl / foldr against NumPy ---------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [((5,), np.float64), ((4, 3), np.float32),
                                         ((3, 2, 2), np.int32), ((1,), np.int64)])
async def test_folds_numpy(shape, dtype):
    value = (np.arange(np.prod(shape)).reshape(shape) % 7 - 2).astype(dtype)
    init = np.full(shape[1:], 5, dtype=dtype)

    def fn(a, e):
        return a * 2 - e

    def build():
        x = af.placeholder(af.as_dtype(dtype), [None] + list(shape[1:]))
        return x, [af.foldl(fn, x), af.foldl(fn, x, initializer=af.constant(init)),
                   af.foldr(fn, x), af.foldr(fn, x, initializer=af.constant(init))]

    graph, (x, folds) = _build(build)
    got = await _run(graph, folds, {x: value})
    rows, rev = list(value), list(value[::-1])
    expected = [functools.reduce(fn, rows[1:], rows[0]), functools.reduce(fn, rows, init),
                functools.reduce(fn, rev[1:], rev[0]), functools.reduce(fn, rev, init)]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == dtype and g.shape == shape[1:]
        np.testing.assert_array_equal(g, e)


async def test_folds_nested_and_reducing_fn():
    m = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
    k = np.array([4, 1, 7], np.int32)

    def build():
        elems = (af.constant(m), {"k": af.constant(k)})
        left = af.foldl(lambda a, e: (a[0] + af.reduce_sum(e[0]), af.maximum(a[1], e[1]["k"])),
                        elems, initializer=(af.constant(0.0), af.constant(0)))
        right = af.foldr(lambda a, e: (a[0] * 2.0 + e[0], {"k": a[1]["k"] - e[1]["k"]}),
                         elems)
        return left, right

    graph, (left, right) = _build(build)
    got = await _run(graph, [left[0], left[1], right[0], right[1]["k"]])
    assert got[0] == pytest.approx(m.sum())
    assert got[1] == k.max()
    np.testing.assert_array_equal(got[2], (m[2] * 2.0 + m[1]) * 2.0 + m[0])
    assert got[3] == k[2] - k[1] - k[0]


def test_fold_errors():
    def build():
        x = af.constant(np.ones((3, 2), np.float32))
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            af.foldl(lambda a, e: (a, a), x)
        with pytest.raises(ValueError, match="enters the loop with shape"):
            af.foldl(lambda a, e: af.concat([a, e], 0), x)
        with pytest.raises(IndexError, match="1\\+ dimensional"):
            af.foldr(lambda a, e: a + e, af.constant(1.0))
        with pytest.raises(TypeError, match="is not callable"):
            af.foldl(None, x)

    _build(build)
