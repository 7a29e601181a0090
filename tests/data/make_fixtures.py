"""Make the TensorFlow-written test fixtures in tests/data.

Run from the project root with a throwaway TensorFlow install (TensorFlow is
never a dependency of aioflow)::

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_fixtures.py

Each program is built with ``tf.compat.v1`` in graph mode (eager off, v1
control flow) in its own ``tf.Graph`` and run in a ``tf.compat.v1.Session``.
For every fixture ``<name>`` it writes:

* ``<name>.pb``  -- ``GraphDef.SerializeToString(deterministic=True)``
* ``<name>.npz`` -- ``feed:<tensor name>`` and ``fetch:<tensor name>`` arrays
* ``fixtures.json`` -- the manifest: description, feeds, fetches, targets,
  ``control_flow``, the sorted distinct node ``ops``, and for ``builder_*``
  fixtures the name of the function below that builds the program.

The ``builder_*`` functions take the TF-like module as their only argument
(``tf.compat.v1`` here, ``aioflow`` in aioflow's tests) and use only names both
share, so aioflow's tests can rebuild the very same program with ``af`` and
compare node names, ops and attrs with TensorFlow's GraphDef. This module does
not import TensorFlow at import time, so the tests can import those functions.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------
# Builder programs: the same code must read almost identically with ``af.``.
# ``tf`` below is the TF-1-like module: ``tf.compat.v1`` or ``aioflow``.
# Each returns the list of tensors to fetch; placeholders are named so the
# driver can feed them by name.
# ---------------------------------------------------------------------------


def builder_mlp(tf):
    """Two dense layers under name scopes: placeholder, constants, matmul, +, relu,
    reduce_sum(axis=1, keepdims=True), and default op names (MatMul, add, Relu)."""
    x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
    with tf.name_scope("layer1"):
        w = tf.constant([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]], name="w")
        b = tf.constant([0.1, -0.2], name="b")
        h = tf.nn.relu(tf.matmul(x, w) + b)
    with tf.name_scope("layer2"):
        w2 = tf.constant([[1.0, -2.0, 0.5], [0.5, 1.0, -1.0]], name="w")
        y = tf.matmul(h, w2, transpose_b=False)
    out = tf.reduce_sum(y, axis=1, keepdims=True, name="out")
    return [h, y, out]


def builder_ops(tf):
    """Operator overloads (+ * - / @ unary -, indexing x[1:, None], x[::-1], x[:, 0]),
    repeated default names (add, add_1), reused scope names (scope, scope_1), and
    cast, reshape, concat, stack, transpose, reduce_mean, maximum, add_n."""
    x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
    c = tf.constant([[1.0, 2.0, 3.0]])
    a = x + c
    a2 = a + 1.0
    m = x * 2.0
    s = x - c
    d = x / 4.0
    n = -x
    mm = x @ tf.transpose(x)
    sl1 = x[1:, None]
    sl2 = x[::-1]
    sl3 = x[:, 0]
    with tf.name_scope("scope"):
        r = tf.reshape(x, [-1])
        ci = tf.cast(x, tf.int32)
    with tf.name_scope("scope"):
        cat = tf.concat([x, m], axis=1)
        st = tf.stack([x, s], axis=0)
    mean = tf.reduce_mean(x, axis=0)
    mx = tf.math.maximum(x, 0.0)
    total = tf.add_n([a, m, s], name="total")
    return [a, a2, m, s, d, n, mm, sl1, sl2, sl3, r, ci, cat, st, mean, mx, total]


def builder_control_deps(tf):
    """Control dependencies: nested contexts, a Const created inside one, an op
    that already depends on a control input, identity, and control_dependencies(None)."""
    x = tf.placeholder(tf.float32, shape=[2], name="x")
    a = tf.identity(x * 3.0, name="a")
    b = tf.identity(x + 1.0, name="b")
    with tf.control_dependencies([a]):
        c = tf.identity(x, name="c")
        k = tf.constant(5.0, name="k")
        with tf.control_dependencies([b]):
            d = tf.add(c, k, name="d")
            with tf.control_dependencies(None):
                e = tf.identity(x, name="e")
        f = tf.identity(a, name="f")
    out = tf.identity(d + e + f, name="out")
    return [c, d, e, f, out]


def builder_import(tf):
    """A small graph imported twice with import_graph_def(name="imp", input_map=...):
    the second import is uniquified to imp_1; mapped placeholders stay in the graph."""
    with tf.Graph().as_default() as src:
        sx = tf.placeholder(tf.float32, shape=[None], name="x")
        tf.identity(sx * 2.0 + 1.0, name="out")
    src_def = src.as_graph_def()
    inp = tf.placeholder(tf.float32, shape=[None], name="inp")
    (o1,) = tf.import_graph_def(
        src_def, input_map={"x:0": inp}, return_elements=["out:0"], name="imp"
    )
    (o2,) = tf.import_graph_def(
        src_def, input_map={"x:0": o1}, return_elements=["out:0"], name="imp"
    )
    out = tf.identity(o2, name="out")
    return [o1, o2, out]


def builder_import_src(tf):
    """The source graph that builder_import imports (x -> out = x * 2 + 1)."""
    sx = tf.placeholder(tf.float32, shape=[None], name="x")
    out = tf.identity(sx * 2.0 + 1.0, name="out")
    return [out]


# ---------------------------------------------------------------------------
# Driver (needs TensorFlow).
# ---------------------------------------------------------------------------


class Maker:
    """Builds, runs and saves fixtures; collects the manifest."""

    def __init__(self, tf, out_dir: Path):
        self.tf = tf
        self.out_dir = out_dir
        self.manifest: dict[str, dict] = {}

    def save(self, name, graph, feeds, fetches, description, control_flow, targets=(), extra=None):
        """Run `fetches` (tensors) with `feeds` ({tensor: array}) and write the files."""
        tf = self.tf
        feed_dict = {t: np.asarray(v) for t, v in feeds.items()}
        with tf.compat.v1.Session(graph=graph) as sess:
            values = sess.run(list(fetches) + list(targets), feed_dict=feed_dict)
        values = values[: len(fetches)]
        gdef = graph.as_graph_def()
        (self.out_dir / f"{name}.pb").write_bytes(gdef.SerializeToString(deterministic=True))
        arrays = {}
        for t, v in feed_dict.items():
            arrays[f"feed:{t.name}"] = v
        for t, v in zip(fetches, values, strict=True):
            key = f"fetch:{t.name}"
            assert key not in arrays, key
            arrays[key] = np.asarray(v)
        for v in arrays.values():
            assert v.dtype != object, name
        np.savez(self.out_dir / f"{name}.npz", **arrays)
        # Round-trip check: keys with ':' and '/' survive np.load.
        with np.load(self.out_dir / f"{name}.npz", allow_pickle=False) as z:
            assert sorted(z.files) == sorted(arrays), (name, z.files)
        ops = sorted({n.op for n in gdef.node})
        lib_ops = sorted({n.op for f in gdef.library.function for n in f.node_def})
        entry = {
            "description": description,
            "feeds": [t.name for t in feed_dict],
            "fetches": [t.name for t in fetches],
            "targets": [t.name for t in targets],
            "control_flow": control_flow,
            "ops": ops,
            "num_nodes": len(gdef.node),
        }
        if lib_ops:
            entry["library_ops"] = lib_ops
        if extra:
            entry.update(extra)
        self.manifest[name] = entry
        print(f"{name}: {len(gdef.node)} nodes, {len(fetches)} fetches", file=sys.stderr)

    def write_manifest(self):
        """Write fixtures.json (sorted keys, stable output)."""
        text = json.dumps(self.manifest, indent=1, sort_keys=True) + "\n"
        (self.out_dir / "fixtures.json").write_text(text)


def make_core(mk: Maker):
    """Core op-set fixtures (no control flow)."""
    tf = mk.tf
    v1 = tf.compat.v1
    rng = np.random.default_rng(1234)

    # -- core_math: element-wise float math, comparison, logic, cast, AddN, Softmax.
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        y = v1.placeholder(tf.float32, [None, 3], name="y")  # positive
        c = tf.constant([[-2.5, 0.5, 1.0]], name="c")
        outs = [
            tf.raw_ops.Add(x=x, y=y, name="add_v1"),
            tf.add(x, y, name="add"),
            tf.subtract(x, y, name="sub"),
            tf.multiply(x, y, name="mul"),
            tf.realdiv(x, y, name="realdiv"),
            tf.math.floordiv(x, y, name="floordiv"),
            tf.math.floormod(x, y, name="floormod"),
            tf.truncatediv(x, y, name="truncatediv"),
            tf.truncatemod(x, y, name="truncatemod"),
            tf.pow(y, x, name="pow"),
            tf.maximum(x, c, name="maximum"),
            tf.minimum(x, c, name="minimum"),
            tf.negative(x, name="neg"),
            tf.abs(x, name="abs"),
            tf.sign(x, name="sign"),
            tf.square(x, name="square"),
            tf.sqrt(y, name="sqrt"),
            tf.math.rsqrt(y, name="rsqrt"),
            tf.exp(x, name="exp"),
            tf.math.log(y, name="log"),
            tf.math.log1p(y, name="log1p"),
            tf.sin(x, name="sin"),
            tf.cos(x, name="cos"),
            tf.tanh(x, name="tanh"),
            tf.sigmoid(x, name="sigmoid"),
            tf.nn.relu(x, name="relu"),
            tf.nn.relu6(x * 3.0, name="relu6"),
            tf.nn.softplus(x, name="softplus"),
            tf.floor(x, name="floor"),
            tf.math.ceil(x, name="ceil"),
            tf.round(x, name="round"),  # half to even
            tf.math.reciprocal(y, name="reciprocal"),
            tf.math.squared_difference(x, y, name="squared_difference"),
            tf.less(x, c, name="less"),
            tf.less_equal(x, c, name="less_equal"),
            tf.greater(x, c, name="greater"),
            tf.greater_equal(x, c, name="greater_equal"),
            tf.equal(x, c, name="equal"),
            tf.not_equal(x, c, name="not_equal"),
        ]
        p = tf.less(x, 0.0, name="p")
        q = tf.greater(y, 1.0, name="q")
        outs += [
            tf.logical_and(p, q, name="logical_and"),
            tf.logical_or(p, q, name="logical_or"),
            tf.logical_not(p, name="logical_not"),
            tf.cast(x, tf.int32, name="cast_f2i"),  # truncates toward zero
            tf.cast(tf.cast(x, tf.int32), tf.float32, name="cast_i2f"),
            tf.cast(p, tf.float32, name="cast_b2f"),
            tf.cast(x, tf.bool, name="cast_f2b"),
            tf.add_n([x, y, x], name="add_n"),
            tf.nn.softmax(x, name="softmax"),
        ]
        xv = np.array(
            [[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5], [0.0, 1.0, -1.0], [-2.0, 3.25, 0.75]], np.float32
        )
        yv = np.array(
            [[0.5, 1.0, 2.0], [1.5, 0.75, 3.0], [2.0, 0.5, 1.25], [1.0, 2.5, 0.25]], np.float32
        )
    mk.save(
        "core_math",
        g,
        {x: xv, y: yv},
        outs,
        "Element-wise float math, comparisons, logic, Cast, AddN, Softmax on fed [4,3] "
        "placeholders (x has .5 ties for Round; y > 0).",
        False,
    )

    # -- core_intdiv: floor vs truncate division/modulo with negative numbers.
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.int32, [None], name="a")
        b = v1.placeholder(tf.int32, [None], name="b")
        fa = v1.placeholder(tf.float32, [None], name="fa")
        fb = v1.placeholder(tf.float32, [None], name="fb")
        outs = [
            tf.math.floordiv(a, b, name="floordiv"),
            tf.math.floormod(a, b, name="floormod"),
            tf.truncatediv(a, b, name="truncatediv"),
            tf.truncatemod(a, b, name="truncatemod"),
            tf.identity(a // b, name="op_floordiv"),
            tf.identity(a % b, name="op_mod"),
            tf.abs(a, name="abs"),
            tf.negative(a, name="neg"),
            tf.sign(a, name="sign"),
            tf.maximum(a, b, name="maximum"),
            tf.square(a, name="square"),
            tf.math.floormod(fa, fb, name="f_floormod"),
            tf.truncatemod(fa, fb, name="f_truncatemod"),
            tf.math.floordiv(fa, fb, name="f_floordiv"),
        ]
        av = np.array([7, -7, 7, -7, 0, 9, -9, 1, -1, 6], np.int32)
        bv = np.array([2, 2, -2, -2, 3, 3, 4, -4, 5, -3], np.int32)
    mk.save(
        "core_intdiv",
        g,
        {a: av, b: bv, fa: av.astype(np.float32) + 0.5, fb: bv.astype(np.float32)},
        outs,
        "int32 FloorDiv/FloorMod vs TruncateDiv/TruncateMod with negative operands "
        "(also // and % overloads, float FloorMod/TruncateMod).",
        False,
    )

    # -- core_matmul: MatMul with transposes and BatchMatMulV2 with broadcasting.
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.float32, [2, 3], name="a")
        b = v1.placeholder(tf.float32, [3, 4], name="b")
        a3 = v1.placeholder(tf.float32, [2, 2, 3], name="a3")
        b3 = v1.placeholder(tf.float32, [1, 3, 2], name="b3")
        outs = [
            tf.matmul(a, b, name="mm"),
            tf.matmul(a, a, transpose_b=True, name="mm_tb"),
            tf.matmul(a, a, transpose_a=True, name="mm_ta"),
            tf.matmul(b, a, transpose_a=True, transpose_b=True, name="mm_tab"),
            tf.matmul(a3, b3, name="bmm"),
            tf.matmul(a3, a3, adjoint_b=True, name="bmm_adj_b"),
        ]
        feeds = {
            a: rng.integers(-3, 4, (2, 3)).astype(np.float32),
            b: rng.integers(-3, 4, (3, 4)).astype(np.float32),
            a3: rng.integers(-3, 4, (2, 2, 3)).astype(np.float32),
            b3: rng.integers(-3, 4, (1, 3, 2)).astype(np.float32),
        }
    mk.save(
        "core_matmul",
        g,
        feeds,
        outs,
        "MatMul with transpose_a/transpose_b and BatchMatMulV2 (broadcast batch, adj_y).",
        False,
    )

    # -- core_reduce: reductions with keepdims / negative axes, ArgMax/ArgMin.
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        bx = v1.placeholder(tf.bool, [None, 3], name="bx")
        ix = v1.placeholder(tf.int32, [None, 3], name="ix")
        outs = [
            tf.reduce_sum(x, name="sum_all"),
            tf.reduce_sum(x, axis=1, keepdims=True, name="sum_1_keep"),
            tf.reduce_sum(x, axis=[0, 1], name="sum_01"),
            tf.reduce_mean(x, axis=-1, name="mean_neg1"),
            tf.reduce_max(x, axis=0, name="max_0"),
            tf.reduce_min(x, axis=-2, keepdims=True, name="min_neg2_keep"),
            tf.reduce_prod(x, axis=1, name="prod_1"),
            tf.reduce_all(bx, axis=1, name="all_1"),
            tf.reduce_any(bx, axis=0, keepdims=True, name="any_0_keep"),
            tf.reduce_all(bx, name="all_all"),
            tf.reduce_sum(ix, axis=0, name="isum_0"),
            tf.reduce_max(ix, axis=-1, name="imax_neg1"),
            tf.argmax(x, axis=1, name="argmax_1"),
            tf.argmin(x, axis=0, name="argmin_0"),
            tf.argmax(ix, axis=-1, output_type=tf.int32, name="argmax_i32"),
        ]
        feeds = {
            x: np.array(
                [[1.0, -2.0, 3.0], [4.5, 0.5, -6.0], [0.25, 2.0, 2.0], [-1.0, -1.0, 8.0]],
                np.float32,
            ),
            bx: np.array(
                [
                    [True, True, True],
                    [True, False, True],
                    [False, False, False],
                    [True, True, False],
                ]
            ),
            ix: rng.integers(-5, 6, (4, 3)).astype(np.int32),
        }
    mk.save(
        "core_reduce",
        g,
        feeds,
        outs,
        "Sum/Mean/Max/Min/Prod/All/Any with keepdims and negative axes; ArgMax/ArgMin.",
        False,
    )

    # -- core_array: shapes and layout.
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        u = v1.placeholder(tf.float32, None, name="u")  # unknown rank: Rank/Shape/Size ops
        cond = v1.placeholder(tf.bool, [None, 3], name="cond")
        row_cond = v1.placeholder(tf.bool, [3], name="row_cond")
        e = tf.expand_dims(x, 1, name="expand_dims")  # [4,1,3]
        parts = tf.unstack(x, axis=1, name="unstack")
        outs = [
            tf.reshape(x, [-1], name="reshape_flat"),
            tf.reshape(x, [2, -1, 3], name="reshape_neg1"),
            tf.transpose(x, name="transpose"),
            tf.transpose(tf.reshape(x, [2, 2, 3]), perm=[2, 0, 1], name="transpose_perm"),
            tf.concat([x, x * 2.0], axis=0, name="concat_0"),
            tf.concat([x, x + 1.0], axis=-1, name="concat_neg1"),
            tf.stack([x, -x], name="stack_0"),
            tf.stack([x, -x], axis=-1, name="stack_neg1"),
            *parts,
            e,
            tf.expand_dims(x, -1, name="expand_dims_neg1"),
            tf.squeeze(e, axis=[1], name="squeeze_axis"),
            tf.squeeze(tf.reshape(x, [1, -1, 1, 3]), name="squeeze_all"),
            tf.shape(x, name="shape"),
            tf.shape(x, out_type=tf.int64, name="shape_i64"),
            tf.size(x, name="size"),
            tf.shape(u, name="shape_u"),
            tf.size(u, name="size_u"),
            tf.rank(u, name="rank_u"),
            tf.fill(tf.shape(x), 7.0, name="fill_like"),
            tf.fill([2, 3], 1.5, name="fill_const"),
            tf.range(0, 10, 3, name="range_int"),
            tf.range(5, 0, -2, name="range_neg_delta"),
            tf.range(1.0, 2.0, 0.25, name="range_float"),
            v1.where(cond, x, -x, name="select"),
            tf.where(row_cond, x, 0.0, name="select_v2"),  # broadcasts
            tf.nn.softmax(x, axis=0, name="softmax_0"),
        ]
        feeds = {
            x: np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0,
            u: np.arange(24, dtype=np.float32).reshape(2, 3, 4),
            cond: np.array([[True, False, True]] * 2 + [[False, True, False]] * 2),
            row_cond: np.array([False, True, True]),
        }
    mk.save(
        "core_array",
        g,
        feeds,
        outs,
        "Reshape(-1), Transpose, ConcatV2, Pack/Unpack with axis, ExpandDims, Squeeze, "
        "Shape/Size/Rank (also on an unknown-rank placeholder), Fill, Range, Select, "
        "SelectV2 with broadcasting, Softmax along axis 0.",
        False,
    )

    # -- core_slice: StridedSlice variants.
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        t = v1.placeholder(tf.int32, [2, 3, 4], name="t")
        outs = [
            tf.identity(x[1:, ..., None], name="s_new_axis"),
            tf.identity(x[::-1], name="s_reverse"),
            tf.identity(x[:, 0], name="s_shrink"),
            tf.identity(x[-1], name="s_last_row"),
            tf.identity(x[0:2, 1:3], name="s_range"),
            tf.identity(x[..., 1], name="s_ellipsis_shrink"),
            tf.identity(x[::2, ::-2], name="s_strides"),
            tf.identity(t[:, 1, ::-1], name="t_mid"),
            tf.identity(t[1, ..., 2:], name="t_ellipsis"),
            tf.identity(t[None, -1, :, 1], name="t_new_shrink"),
            tf.identity(x[-100:100], name="s_clamped"),
        ]
        feeds = {
            x: np.arange(15, dtype=np.float32).reshape(5, 3),
            t: np.arange(24, dtype=np.int32).reshape(2, 3, 4),
        }
    mk.save(
        "core_slice",
        g,
        feeds,
        outs,
        "StridedSlice: new axis, ellipsis, negative strides, shrink axis, clamped bounds.",
        False,
    )

    # -- core_misc: Identity, IdentityN, PlaceholderWithDefault, StopGradient, NoOp.
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 3], name="x")
        dflt = v1.placeholder_with_default(tf.constant([1.0, 2.0, 3.0]), [3], name="pwd_default")
        fed = v1.placeholder_with_default(tf.constant([0.0, 0.0]), [None], name="pwd_fed")
        idn = tf.identity_n([x, dflt], name="identity_n")
        c = tf.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="const_i64")
        sg = tf.stop_gradient(x * 2.0, name="stop_gradient")
        grp = tf.group(sg, idn[0], name="group")
        outs = [
            tf.identity(x, name="identity"),
            idn[0],
            idn[1],
            tf.identity(dflt, name="default_used"),
            tf.identity(fed, name="fed_used"),
            c,
            tf.constant(True, name="const_bool"),
            tf.constant(np.array([[1.5, -2.0]], np.float64), name="const_f64"),
            sg,
        ]
        feeds = {
            x: np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32),
            fed: np.array([9.0, 8.0, 7.0], np.float32),
        }
    mk.save(
        "core_misc",
        g,
        feeds,
        outs,
        "Const of several dtypes, Identity, IdentityN, PlaceholderWithDefault (one fed, one "
        "default), StopGradient, NoOp (tf.group, a run target).",
        False,
        targets=[grp],
    )


def make_builders(mk: Maker):
    """Builder fixtures: programs aioflow's tests rebuild with the `af` API."""
    tf = mk.tf
    v1 = tf.compat.v1
    xv = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0], [2.0, 1.0, 1.0]], np.float32)

    specs = [
        ("builder_mlp", builder_mlp, {"x:0": xv}),
        ("builder_ops", builder_ops, {"x:0": xv}),
        ("builder_control_deps", builder_control_deps, {"x:0": np.array([1.0, -2.0], np.float32)}),
        ("builder_import", builder_import, {"inp:0": np.array([0.0, 1.0, -2.5], np.float32)}),
        ("builder_import_src", builder_import_src, {"x:0": np.array([0.0, 1.0, -2.5], np.float32)}),
    ]
    for name, fn, feeds in specs:
        g = tf.Graph()
        with g.as_default():
            fetches = fn(v1)
            feed_t = {g.get_tensor_by_name(k): v for k, v in feeds.items()}
        doc = " ".join(fn.__doc__.split())
        mk.save(name, g, feed_t, fetches, doc, False, extra={"builder": fn.__name__})


def make_control_flow(mk: Maker):
    """v1 control-flow fixtures (Switch/Merge/Enter/Exit/NextIteration)."""
    tf = mk.tf
    v1 = tf.compat.v1

    # -- cf_cond
    g = tf.Graph()
    with g.as_default():
        pred = v1.placeholder(tf.bool, [], name="pred")
        x = v1.placeholder(tf.float32, [3], name="x")
        r = v1.cond(pred, lambda: x * 2.0, lambda: x - 1.0, name="cond")
        out = tf.identity(r, name="out")
        r_not = v1.cond(tf.logical_not(pred), lambda: x * 2.0, lambda: x - 1.0, name="cond_not")
        out_not = tf.identity(r_not, name="out_not")
        # Branches returning an outside tensor unchanged and branch-local constants.
        p0, p1 = v1.cond(
            pred, lambda: (x, tf.constant(1.0)), lambda: (x * 0.0, tf.constant(2.0)), name="pair"
        )
        pair0 = tf.identity(p0, name="pair0")
        pair1 = tf.identity(p1, name="pair1")
    mk.save(
        "cf_cond",
        g,
        {pred: np.array(True), x: np.array([1.0, 2.0, 3.0], np.float32)},
        [out, out_not, pair0, pair1],
        "tf.cond on a fed predicate (and on its negation, so both branch kinds run); a "
        "two-output cond whose branches return an outside tensor and branch-local Consts.",
        True,
    )

    # -- cf_nested_cond
    g = tf.Graph()
    with g.as_default():
        p1 = v1.placeholder(tf.bool, [], name="p1")
        x = v1.placeholder(tf.float32, [3], name="x")
        p2 = tf.greater(tf.reduce_sum(x), 0.0, name="p2")

        def nested(pred_outer, name):
            return v1.cond(
                pred_outer,
                lambda: v1.cond(p2, lambda: x + 10.0, lambda: x - 10.0, name="inner_t"),
                lambda: v1.cond(p2, lambda: x * 10.0, lambda: x / 10.0, name="inner_f"),
                name=name,
            )

        out = tf.identity(nested(p1, "outer"), name="out")
        out_not = tf.identity(nested(tf.logical_not(p1), "outer_not"), name="out_not")
    mk.save(
        "cf_nested_cond",
        g,
        {p1: np.array(True), x: np.array([1.0, -0.5, 2.0], np.float32)},
        [out, out_not],
        "cond nested in both branches of a cond; inner predicate computed from x, outer fed.",
        True,
    )

    # -- cf_cond_untaken_fails
    g = tf.Graph()
    with g.as_default():
        pred = v1.placeholder(tf.bool, [], name="pred")
        x = v1.placeholder(tf.float32, [None], name="x")

        def safe():
            return x + 1.0

        def bad():
            nan = tf.math.log(x - 100.0)  # NaN for the fed x
            checked = tf.debugging.check_numerics(nan, "untaken branch ran", name="check")
            r = tf.reshape(checked, [7, 5], name="bad_reshape")  # impossible for 3 elements
            ok = v1.Assert(tf.reduce_all(x > 1000.0), [x], name="never_true")
            with tf.control_dependencies([ok]):
                return tf.reshape(r, [-1])

        out = tf.identity(v1.cond(pred, safe, bad, name="cond"), name="out")
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    mk.save(
        "cf_cond_untaken_fails",
        g,
        {pred: np.array(True), x: xv},
        [out],
        "The untaken branch would fail (CheckNumerics on NaN, Reshape to [7,5], Assert); "
        "fed pred=True takes the safe branch, so the run succeeds.",
        True,
        extra={
            "notes": "Feeding pred=False instead makes TensorFlow raise "
            "InvalidArgumentError from one of failing_nodes (which one is a race).",
            "failing_nodes": sorted(
                n.name
                for n in g.as_graph_def().node
                if n.op in ("CheckNumerics", "Assert") or n.name.endswith("bad_reshape")
            ),
        },
    )
    with v1.Session(graph=g) as sess:
        try:
            sess.run(out, {pred: False, x: xv})
        except tf.errors.InvalidArgumentError as err:
            failed = err.node_def.name if err.node_def else None
            assert failed in mk.manifest["cf_cond_untaken_fails"]["failing_nodes"], failed
        else:
            raise AssertionError("bad branch did not fail")

    # -- cf_while_counter
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        i = v1.while_loop(lambda i: i < n, lambda i: i + 1, [tf.constant(0)], name="while")
        out = tf.identity(i, name="out")
        i2, s2 = v1.while_loop(
            lambda i, s: i < n,
            lambda i, s: (i + 1, s + i),
            [tf.constant(0), tf.constant(0)],
            name="sum_loop",
        )
        total = tf.identity(s2, name="total")
        count = tf.identity(i2, name="count")
    mk.save(
        "cf_while_counter",
        g,
        {n: np.array(5, np.int32)},
        [out, total, count],
        "while i < n: i += 1 (one loop var); and a two-var loop summing 0..n-1.",
        True,
    )

    # -- cf_while_vector
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        i0 = tf.constant(0, name="i0")
        v0 = tf.zeros([0], tf.float32, name="v0")

        def body(i, v):
            sq = tf.cast(i * i, tf.float32)
            return i + 1, tf.concat([v, tf.reshape(sq, [1])], axis=0)

        _, v = v1.while_loop(
            lambda i, v: i < n,
            body,
            [i0, v0],
            shape_invariants=[i0.shape, tf.TensorShape([None])],
            name="while",
        )
        out = tf.identity(v, name="out")
    mk.save(
        "cf_while_vector",
        g,
        {n: np.array(6, np.int32)},
        [out],
        "while loop growing a vector with concat (shape_invariants [None]): [i*i for i<n].",
        True,
    )

    # -- cf_nested_while
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")

        def outer_body(i, acc, steps):
            def inner_body(j, a, s):
                return j + 1, a + i * j, s + 1

            _, acc2, steps2 = v1.while_loop(
                lambda j, a, s: j < i, inner_body, [tf.constant(0), acc, steps], name="inner"
            )
            return i + 1, acc2, steps2

        _, acc, steps = v1.while_loop(
            lambda i, a, s: i < n,
            outer_body,
            [tf.constant(0), tf.constant(0), tf.constant(0)],
            name="outer",
        )
        out = tf.identity(acc, name="out")
        inner_steps = tf.identity(steps, name="inner_steps")
    mk.save(
        "cf_nested_while",
        g,
        {n: np.array(5, np.int32)},
        [out, inner_steps],
        "while inside while; the inner loop's bound and body use the outer loop variable "
        "(sum of i*j for j < i < n, and the total inner iteration count).",
        True,
    )

    # -- cf_while_in_untaken_cond
    g = tf.Graph()
    with g.as_default():
        pred = v1.placeholder(tf.bool, [], name="pred")
        n = v1.placeholder(tf.int32, [], name="n")
        x = v1.placeholder(tf.float32, [2], name="x")

        def with_loop():
            return v1.while_loop(
                lambda i, s: i < n,
                lambda i, s: (i + 1, s + x),
                [tf.constant(0), tf.zeros_like(x)],
                name="while",
            )[1]

        def without():
            return x * 0.0 - 1.0

        out = tf.identity(v1.cond(pred, with_loop, without, name="cond"), name="out")
        out_taken = tf.identity(
            v1.cond(tf.logical_not(pred), with_loop, without, name="cond_taken"), name="out_taken"
        )
    mk.save(
        "cf_while_in_untaken_cond",
        g,
        {pred: np.array(False), n: np.array(3, np.int32), x: np.array([1.5, -2.0], np.float32)},
        [out, out_taken],
        "A while loop inside the untaken (dead) branch of a cond (out), and the same loop "
        "in a taken branch (out_taken).",
        True,
    )

    # -- cf_cond_in_while
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")

        def body(i, acc):
            fi = tf.cast(i, tf.float32)
            acc2 = v1.cond(
                tf.equal(i % 2, 0), lambda: acc + fi, lambda: acc - 2.0 * fi, name="cond"
            )
            return i + 1, acc2

        _, acc = v1.while_loop(
            lambda i, a: i < n, body, [tf.constant(0), tf.constant(0.0)], name="while"
        )
        out = tf.identity(acc, name="out")
    mk.save(
        "cf_cond_in_while",
        g,
        {n: np.array(7, np.int32)},
        [out],
        "cond inside a while body (even i add i, odd i subtract 2i).",
        True,
    )

    # -- cf_loop_invariants
    g = tf.Graph()
    with g.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        x = v1.placeholder(tf.float32, [3], name="x")
        w = tf.constant([0.5, 1.0, -1.0], name="w")
        scale = tf.multiply(x, 2.0, name="scale")

        def body(i, acc):
            return i + 1, acc * w + scale

        _, acc = v1.while_loop(
            lambda i, a: i < n, body, [tf.constant(0), tf.zeros([3])], name="while"
        )
        out = tf.identity(acc, name="out")
    mk.save(
        "cf_loop_invariants",
        g,
        {n: np.array(4, np.int32), x: np.array([1.0, 2.0, 3.0], np.float32)},
        [out],
        "Loop body and cond use outside tensors (a Const, a computed tensor, a fed "
        "placeholder): constant Enter nodes.",
        True,
    )

    # -- cf_parallel_1 / cf_parallel_10
    for p in (1, 10):
        g = tf.Graph()
        with g.as_default():
            x = v1.placeholder(tf.float32, [None], name="x")
            n = tf.shape(x)[0]

            def body(i, acc, mx, x=x):
                xi = x[i]
                return i + 1, acc + xi * xi + tf.sin(xi), tf.maximum(mx, xi)

            _, acc, mx = v1.while_loop(
                lambda i, a, m, n=n: i < n,
                body,
                [tf.constant(0), tf.constant(0.0), tf.constant(-1e9)],
                parallel_iterations=p,
                name="while",
            )
            out = tf.identity(acc, name="out")
            out_max = tf.identity(mx, name="out_max")
        mk.save(
            f"cf_parallel_{p}",
            g,
            {x: np.linspace(-2.0, 2.0, 9, dtype=np.float32)},
            [out, out_max],
            f"while loop with parallel_iterations={p}: indexes a fed vector with x[i] "
            "(dynamic StridedSlice), sums x^2 + sin x and tracks the max.",
            True,
        )

    # -- cf_tensorarray
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        n = tf.shape(x)[0]
        ta_in = tf.TensorArray(tf.float32, size=n, clear_after_read=False, name="ta_in").unstack(x)
        ta_out = tf.TensorArray(tf.float32, size=n, clear_after_read=False, name="ta_out")
        ta_dyn = tf.TensorArray(tf.int32, size=0, dynamic_size=True, name="ta_dyn")

        def body(i, ta, td):
            v = ta_in.read(i)
            ta = ta.write(i, v * 2.0 + tf.cast(i, tf.float32))
            td = td.write(i, i * i)
            return i + 1, ta, td

        _, ta_out, ta_dyn = v1.while_loop(
            lambda i, ta, td: i < n, body, [tf.constant(0), ta_out, ta_dyn], name="while"
        )
        stacked = tf.identity(ta_out.stack(), name="stacked")
        gathered = tf.identity(ta_out.gather([4, 0, 2]), name="gathered")
        size = tf.identity(ta_out.size(), name="size")
        dyn = tf.identity(ta_dyn.stack(), name="dyn_stacked")
        read1 = tf.identity(ta_in.read(1), name="read1")
    mk.save(
        "cf_tensorarray",
        g,
        {x: np.arange(10, dtype=np.float32).reshape(5, 2)},
        [stacked, gathered, size, dyn, read1],
        "TensorArray (V3 ops): unstack a fed matrix, read it in a while loop, write to a "
        "fixed-size and a dynamic_size TensorArray, then stack / gather / size / read.",
        True,
    )

    # -- cf_max_iterations
    g = tf.Graph()
    with g.as_default():
        m = v1.placeholder(tf.int32, [], name="m")
        i = v1.while_loop(
            lambda i: i < 1000,
            lambda i: i + 2,
            [tf.constant(0)],
            maximum_iterations=m,
            name="while",
        )
        out = tf.identity(i, name="out")
        j = v1.while_loop(
            lambda j: j < 7,
            lambda j: j + 1,
            [tf.constant(0)],
            maximum_iterations=100,
            name="while_cond_first",
        )
        out2 = tf.identity(j, name="out_cond_first")
    mk.save(
        "cf_max_iterations",
        g,
        {m: np.array(5, np.int32)},
        [out, out2],
        "maximum_iterations: fed limit stops the loop (out = 2*m); a large constant "
        "limit where the loop condition stops first.",
        True,
    )

    # -- cf_case
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.int32, [], name="x")
        pairs = [
            (tf.less(x, 0), lambda: tf.constant(-1.0)),
            (tf.less(x, 10), lambda: tf.constant(10.0)),
            (tf.less(x, 5), lambda: tf.constant(5.0)),
        ]
        r = v1.case(pairs, default=lambda: tf.constant(100.0), exclusive=False, name="case")
        out = tf.identity(r, name="out")
        pairs_ex = [
            (tf.equal(x, 3), lambda: tf.cast(x, tf.float32) * 2.0),
            (tf.equal(x, 4), lambda: tf.constant(4.0)),
        ]
        r_ex = v1.case(pairs_ex, default=lambda: tf.constant(0.0), exclusive=True, name="case_ex")
        out_ex = tf.identity(r_ex, name="out_ex")
    mk.save(
        "cf_case",
        g,
        {x: np.array(3, np.int32)},
        [out, out_ex],
        "tf.compat.v1.case (nested v1 conds): first true pred wins when exclusive=False; "
        "exclusive=True adds the single-true-pred check.",
        True,
    )


def main() -> None:
    """Build every fixture and write the manifest."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    mk = Maker(tf, HERE)
    make_core(mk)
    make_builders(mk)
    make_control_flow(mk)
    mk.write_manifest()
    all_ops = sorted({op for e in mk.manifest.values() for op in e["ops"]})
    print(
        f"{len(mk.manifest)} fixtures, {len(all_ops)} distinct ops (TF {tf.__version__}):",
        file=sys.stderr,
    )
    print(" ".join(all_ops), file=sys.stderr)


if __name__ == "__main__":
    main()
