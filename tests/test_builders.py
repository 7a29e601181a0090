"""The op builders: operator overloads, indexing (StridedSlice masks as TF computes them),
TF's node naming for the Python-level helpers, and TF's errors for bad dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow.api as af


@pytest.fixture
def x(graph):
    return af.placeholder(af.float32, [None, 3], name="x")


def _inputs(t):
    return [i.name for i in t.op.inputs]


# -- operator overloads ----------------------------------------------------------------------

@pytest.mark.parametrize("fn, op_type, name", [
    (lambda a, b: a + b, "AddV2", "add"),
    (lambda a, b: a - b, "Sub", "sub"),
    (lambda a, b: a * b, "Mul", "mul"),
    (lambda a, b: a / b, "RealDiv", "truediv"),
    (lambda a, b: a // b, "FloorDiv", "floordiv"),
    (lambda a, b: a % b, "FloorMod", "mod"),
    (lambda a, b: a ** b, "Pow", "pow"),
    (lambda a, b: a < b, "Less", "Less"),
    (lambda a, b: a <= b, "LessEqual", "LessEqual"),
    (lambda a, b: a > b, "Greater", "Greater"),
    (lambda a, b: a >= b, "GreaterEqual", "GreaterEqual"),
])
def test_binary_operators(x, fn, op_type, name):
    y = af.placeholder(af.float32, [None, 3], name="y")
    out = fn(x, y)
    assert (out.op.type, out.op.name) == (op_type, name)
    assert _inputs(out) == ["x:0", "y:0"]
    assert out.op.get_attr("T") == af.float32
    # A Python operand becomes the Const "<scope>/y" of the tensor's dtype.
    out2 = fn(x, 2.0)
    assert out2.op.type == op_type
    assert _inputs(out2) == ["x:0", f"{out2.op.name}/y:0"]
    const = out2.op.inputs[1]
    assert const.op.type == "Const" and const.dtype == af.float32
    assert const.op.get_attr("value") == np.float32(2.0)


@pytest.mark.parametrize("fn, op_type, name", [
    (lambda a: 2.0 + a, "AddV2", "add"),
    (lambda a: 2.0 - a, "Sub", "sub"),
    (lambda a: 2.0 * a, "Mul", "mul"),
    (lambda a: 2.0 / a, "RealDiv", "truediv"),
    (lambda a: 2.0 // a, "FloorDiv", "floordiv"),
    (lambda a: 2.0 % a, "FloorMod", "mod"),
    (lambda a: 2.0 ** a, "Pow", "pow"),
])
def test_reflected_operators(x, fn, op_type, name):
    out = fn(x)
    assert (out.op.type, out.op.name) == (op_type, name)
    assert _inputs(out) == [f"{name}/x:0", "x:0"]
    assert out.op.inputs[0].dtype == af.float32


def test_reflected_operator_converts_to_tensor_dtype(graph):
    i = af.placeholder(af.int64, [], name="i")
    out = 3 - i
    assert out.op.inputs[0].dtype == af.int64
    assert out.dtype == af.int64


def test_numpy_operands(x):
    out = np.ones(3, np.float32) + x
    assert out.op.type == "AddV2" and _inputs(out) == ["add/x:0", "x:0"]
    out = x * np.float32(3)
    assert out.op.type == "Mul" and _inputs(out) == ["x:0", "mul/y:0"]


def test_unary_and_logical_operators(x, graph):
    b = af.placeholder(af.bool, [3], name="b")
    c = af.placeholder(af.bool, [3], name="c")
    for fn, op_type, name in [(lambda: -x, "Neg", "Neg"), (lambda: abs(x), "Abs", "Abs"),
                              (lambda: ~b, "LogicalNot", "LogicalNot"),
                              (lambda: b & c, "LogicalAnd", "and"),
                              (lambda: b | c, "LogicalOr", "or")]:
        out = fn()
        assert (out.op.type, out.op.name) == (op_type, name)
    xor = b ^ c
    assert (xor.op.type, xor.op.name) == ("LogicalAnd", "xor")
    assert [t.op.name for t in xor.op.inputs] == ["xor/LogicalOr", "xor/LogicalNot"]


def test_matmul_operator(x):
    out = x @ af.transpose(x)
    assert (out.op.type, out.op.name) == ("MatMul", "matmul")
    assert out.op.get_attr("transpose_a") is False
    assert out.op.get_attr("transpose_b") is False


def test_integer_truediv_casts_to_float(graph):
    i = af.placeholder(af.int32, [2], name="i")
    out = i / 2
    assert out.op.type == "RealDiv" and out.dtype == af.float64
    assert _inputs(out) == ["truediv/Cast:0", "truediv/Cast_1:0"]
    assert out.op.inputs[1].op.inputs[0].name == "truediv/y:0"
    small = af.placeholder(af.int16, [2], name="s")
    assert (small / small).dtype == af.float32
    assert (i // 2).dtype == af.int32


def test_tensor_equality_is_identity(x):
    assert (x == x) is True
    assert (x != x) is False
    assert len({x, x}) == 1


def test_bool_of_tensor_raises(x):
    with pytest.raises(TypeError, match="as a Python `bool` is not allowed"):
        bool(x)


# -- indexing ----------------------------------------------------------------------------------

# Expected begin/end/strides and masks are the values TF wrote in tests/data/core_slice.pb.
SLICES = [
    ("x", lambda t: t[1:, ..., None], [1, 0, 0], [0, 0, 0], [1, 1, 1], (0, 1, 2, 4, 0)),
    ("x", lambda t: t[::-1], [0], [0], [-1], (1, 1, 0, 0, 0)),
    ("x", lambda t: t[:, 0], [0, 0], [0, 1], [1, 1], (1, 1, 0, 0, 2)),
    ("x", lambda t: t[-1], [-1], [0], [1], (0, 0, 0, 0, 1)),
    ("x", lambda t: t[0:2, 1:3], [0, 1], [2, 3], [1, 1], (0, 0, 0, 0, 0)),
    ("x", lambda t: t[..., 1], [0, 1], [0, 2], [1, 1], (0, 0, 1, 0, 2)),
    ("x", lambda t: t[::2, ::-2], [0, 0], [0, 0], [2, -2], (3, 3, 0, 0, 0)),
    ("t", lambda t: t[:, 1, ::-1], [0, 1, 0], [0, 2, 0], [1, 1, -1], (5, 5, 0, 0, 2)),
    ("t", lambda t: t[1, ..., 2:], [1, 0, 2], [2, 0, 0], [1, 1, 1], (0, 4, 2, 0, 1)),
    ("t", lambda t: t[None, -1, :, 1], [0, -1, 0, 1], [0, 0, 0, 2], [1, 1, 1, 1],
     (4, 4, 0, 1, 10)),
    ("x", lambda t: t[-100:100], [-100], [100], [1], (0, 0, 0, 0, 0)),
    ("x", lambda t: t[1:, None], [1, 0], [0, 0], [1, 1], (0, 1, 0, 2, 0)),
]


@pytest.mark.parametrize("which, index, begin, end, strides, masks", SLICES)
def test_getitem_masks(graph, which, index, begin, end, strides, masks):
    tensors = {"x": af.placeholder(af.float32, [None, 3], name="x"),
               "t": af.placeholder(af.int32, [2, 3, 4], name="t")}
    out = index(tensors[which])
    op = out.op
    assert (op.type, op.name) == ("StridedSlice", "strided_slice")
    assert _inputs(out) == [f"{which}:0", "strided_slice/stack:0", "strided_slice/stack_1:0",
                            "strided_slice/stack_2:0"]
    got = [op.inputs[i].op.get_attr("value").tolist() for i in (1, 2, 3)]
    assert got == [begin, end, strides]
    assert all(op.inputs[i].dtype == af.int32 for i in (1, 2, 3))
    names = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    assert tuple(op.get_attr(n) for n in names) == masks
    assert op.get_attr("Index") == af.int32


def test_getitem_static_shapes(graph):
    t = af.placeholder(af.int32, [2, 3, 4], name="t")
    assert t[1].shape.as_list() == [3, 4]
    assert t[:, None].shape.as_list() == [2, 1, 3, 4]
    assert t[..., 1:3].shape.as_list() == [2, 3, 2]
    assert t[::-1, 0, ::2].shape.as_list() == [2, 2]


def test_getitem_with_tensor_index(graph):
    v = af.placeholder(af.float32, [None], name="v")
    i = af.placeholder(af.int32, [], name="i")
    out = v[i]
    # As TF: i + 1 is built outside the strided_slice scope; tensor bounds are packed.
    add = out.op.inputs[2].op.inputs[0].op
    assert (add.type, add.name, _inputs(add.outputs[0])) == ("AddV2", "add", ["i:0", "add/y:0"])
    assert [t.op.type for t in out.op.inputs[1:]] == ["Pack", "Pack", "Const"]
    assert out.op.inputs[1].op.inputs[0] is i
    assert out.op.get_attr("shrink_axis_mask") == 1
    tail = v[i:]
    assert [t.op.name for t in tail.op.inputs[1:]] == [
        "strided_slice_1/stack", "strided_slice_1/stack_1", "strided_slice_1/stack_2"]
    assert tail.op.get_attr("end_mask") == 1


def test_getitem_with_int64_index_casts_to_int64(graph):
    m = af.placeholder(af.float32, [None, 3], name="m")
    j = af.placeholder(af.int64, [], name="j")
    out = m[j, 1:]
    assert out.op.get_attr("Index") == af.int64
    stack = out.op.inputs[1].op
    assert stack.type == "Pack" and [t.op.name for t in stack.inputs] == [
        "j", "strided_slice/stack/1"]


def test_getitem_with_bool_mask(graph):
    m = af.placeholder(af.float32, [None, 3], name="m")
    out = m[m > 0.0]
    assert (out.op.type, out.op.name) == ("GatherV2", "boolean_mask/GatherV2")


@pytest.mark.parametrize("index", ["a", 1.5, np.array([0, 1]), af.float32])
def test_getitem_bad_index(x, index):
    with pytest.raises(TypeError, match="Only integers, slices"):
        x[index]


def test_iterating_unstacks(graph):
    t = af.placeholder(af.float32, [3, 2], name="t")
    rows = list(t)
    assert len(rows) == 3 and rows[0].op.type == "Unpack"
    with pytest.raises(TypeError):
        iter(af.placeholder(af.float32, [None, 2]))


# -- TF's Python-level names ------------------------------------------------------------------

def test_function_default_names(x, graph):
    y = af.placeholder(af.float32, [None, 3], name="y")
    assert af.add(x, y).op.name == "Add"
    assert af.add(x, 1.0).op.inputs[1].op.name == "Add_1/y"
    assert af.subtract(x, y).op.name == "Sub"
    assert af.multiply(x, y).op.name == "Mul"
    assert af.divide(x, y).op.name == "truediv"
    assert af.divide(x, y, name="d").op.name == "d"
    assert af.floordiv(x, y).op.name == "floordiv"
    assert af.mod(x, y).op.name == "FloorMod"
    assert af.pow(x, y).op.name == "Pow"
    assert af.maximum(x, 0.0).op.inputs[1].op.name == "Maximum/y"
    assert af.math.multiply(x, y).op.name == "Mul_1"
    assert af.logical_xor(x > 0, y > 0).op.name == "LogicalXor"


def test_reduce_all_axes(graph):
    x = af.placeholder(af.float32, [None, 3], name="x")
    s = af.reduce_sum(x)
    assert (s.op.type, s.op.name) == ("Sum", "Sum")
    assert s.op.inputs[1].op.name == "Const"
    assert s.op.inputs[1].op.get_attr("value").tolist() == [0, 1]
    assert s.shape.as_list() == []
    u = af.placeholder(af.float32, None, name="u")
    m = af.reduce_max(u)
    r = m.op.inputs[1].op
    assert (r.type, r.name) == ("Range", "range")
    assert [t.op.name for t in r.inputs] == ["range/start", "Rank", "range/delta"]
    assert r.inputs[1].op.type == "Rank"


def test_reduce_axis_spellings(graph):
    x = af.placeholder(af.float32, [None, 3], name="x")
    a = af.reduce_mean(x, reduction_indices=[1], keep_dims=True)
    assert a.op.get_attr("keep_dims") is True
    assert a.op.inputs[1].op.name == "Mean/reduction_indices"
    assert af.reduce_prod(x, 1, True).op.get_attr("keep_dims") is True
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        af.reduce_sum(x, axis=1, reduction_indices=1)


def test_argmax_defaults(x):
    a = af.argmax(x)
    assert a.op.inputs[1].op.get_attr("value") == 0
    assert a.dtype == af.int64
    assert af.argmin(x, dimension=1, output_type=af.int32).dtype == af.int32


def test_transpose_perm(graph):
    x = af.placeholder(af.float32, [None, 3], name="x")
    t = af.transpose(x)
    assert t.op.inputs[1].op.get_attr("value").tolist() == [1, 0]
    u = af.placeholder(af.float32, None, name="u")
    tu = af.transpose(u)
    perm = tu.op.inputs[1].op
    assert (perm.type, perm.name) == ("Range", "transpose_1/Range")
    assert [t.op.name for t in perm.inputs] == [
        "transpose_1/sub", "transpose_1/Range/limit", "transpose_1/Range/delta"]
    assert perm.inputs[0].op.inputs[0].op.name == "transpose_1/Rank"


def test_stack_and_autopacking(graph):
    assert af.stack([1, 2]).op.type == "Const"
    n = af.placeholder(af.int32, [], name="n")
    x = af.placeholder(af.float32, [None], name="x")
    r = af.reshape(x, [n, -1])
    shape = r.op.inputs[1].op
    assert (shape.type, shape.name) == ("Pack", "Reshape/shape")
    assert [t.op.name for t in shape.inputs] == ["n", "Reshape/shape/1"]
    s = af.stack([x, x], axis=1)
    assert (s.op.type, s.op.get_attr("axis")) == ("Pack", 1)
    assert af.convert_to_tensor([n, 3]).op.name == "packed"


def test_concat_single_value(graph):
    x = af.placeholder(af.float32, [3], name="x")
    c = af.concat([x], 0)
    assert (c.op.type, c.op.name) == ("Identity", "concat/concat")


def test_zeros_ones(graph):
    z = af.zeros([2, 3])
    assert (z.op.type, z.op.name, z.shape.as_list()) == ("Const", "zeros", [2, 3])
    big = af.zeros([100, 100], af.int32)
    assert (big.op.type, big.op.name) == ("Fill", "zeros_1")
    assert [t.op.name for t in big.op.inputs] == ["zeros_1/shape_as_tensor", "zeros_1/Const"]
    x = af.placeholder(af.float32, [2], name="x")
    assert af.zeros_like(x).op.type == "Const"
    y = af.placeholder(af.float32, [None], name="y")
    zl = af.zeros_like(y)
    assert (zl.op.type, zl.op.name) == ("ZerosLike", "zeros_like_1")
    ol = af.ones_like(y)
    assert (ol.op.type, ol.op.name) == ("Fill", "ones_like")
    assert [t.op.name for t in ol.op.inputs] == ["ones_like/Shape", "ones_like/Const"]
    b = af.ones([2], af.bool)
    assert b.op.get_attr("value").tolist() == [True, True]


def test_shape_size_rank_are_constants_when_known(graph):
    x = af.placeholder(af.float32, [2, 3], name="x")
    assert af.shape(x).op.type == "Const"
    assert af.shape(x).op.get_attr("value").tolist() == [2, 3]
    assert af.size(x).op.get_attr("value") == 6
    assert af.rank(x).op.get_attr("value") == 2
    u = af.placeholder(af.float32, [None, 3], name="u")
    assert af.shape(u, out_type=af.int64).op.get_attr("out_type") == af.int64
    assert af.size(u).op.type == "Size"
    assert af.rank(u).op.type == "Const"


def test_cast(x):
    assert af.cast(x, af.float32) is x
    c = af.cast(x, af.int32)
    assert (c.op.type, c.op.name) == ("Cast", "Cast")
    assert c.op.get_attr("Truncate") is False
    assert af.to_int32(x).op.name == "ToInt32"


def test_add_n(x):
    assert af.add_n([x]) is x
    assert af.add_n([x], name="one").op.type == "Identity"
    total = af.add_n([x, x, [[1.0, 2.0, 3.0]]])
    assert total.op.get_attr("N") == 3
    assert total.op.inputs[2].op.name == "Const"  # converted before the op's scope, as TF
    assert total.shape.as_list() == [1, 3]
    with pytest.raises(ValueError):
        af.add_n([])


def test_matmul_batched(graph):
    a = af.placeholder(af.float32, [2, 2, 3], name="a")
    b = af.placeholder(af.float32, [2, 3], name="b")
    m = af.matmul(a, b, transpose_b=True)
    assert (m.op.type, m.op.name) == ("BatchMatMulV2", "MatMul")
    assert m.op.get_attr("adj_y") is True and m.op.get_attr("adj_x") is False
    assert m.shape.as_list() == [2, 2, 2]
    m2 = af.matmul(b, b, adjoint_a=True)
    assert (m2.op.type, m2.op.get_attr("transpose_a")) == ("MatMul", True)
    with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a`"):
        af.matmul(b, b, transpose_a=True, adjoint_a=True)


def test_where(graph):
    c = af.placeholder(af.bool, [3], name="c")
    x = af.placeholder(af.float32, [3], name="x")
    assert af.where(c, x, x).op.type == "Select"
    w = af.where(c)
    assert (w.op.type, w.op.name, w.dtype) == ("Where", "Where", af.int64)
    s = af.where_v2(c, x, 0.0)
    assert s.op.type == "SelectV2" and s.op.inputs[2].op.name == "SelectV2/e"
    with pytest.raises(ValueError, match="x and y must both be non-None"):
        af.where(c, x)


def test_split_unstack_one_hot(graph):
    x = af.placeholder(af.float32, [4, 6], name="x")
    parts = af.split(x, 3, axis=1)
    assert len(parts) == 3 and parts[0].op.type == "Split"
    assert parts[0].op.inputs[0].op.name == "split/split_dim"
    sized = af.split(x, [1, 5], axis=1)
    assert sized[0].op.type == "SplitV" and len(sized) == 2
    assert len(af.unstack(x)) == 4
    i = af.placeholder(af.int32, [None], name="i")
    oh = af.one_hot(i, 5)
    assert (oh.op.type, oh.dtype) == ("OneHot", af.float32)
    assert [t.op.name for t in oh.op.inputs[1:]] == [
        "one_hot/depth", "one_hot/on_value", "one_hot/off_value"]
    assert oh.op.get_attr("axis") == -1


def test_group_and_tuple(graph):
    with af.device("/cpu:0"):
        a = af.constant(1.0, name="a")
    with af.device("/cpu:1"):
        b = af.constant(2.0, name="b")
    c = af.constant(3.0, name="c")
    same = af.group(c, name="one")
    assert same.type == "NoOp" and [o.name for o in same.control_inputs] == ["c"]
    g = af.group(a, b, name="both")
    deps = g.control_inputs
    assert [d.type for d in deps] == ["NoOp", "NoOp"]
    assert [d.device for d in deps] == ["/device:CPU:0", "/device:CPU:1"]
    assert [d.control_inputs[0].name for d in deps] == ["a", "b"]
    t1, t2 = af.tuple([a, c])
    assert t1.op.type == "Identity" and t1.op.name == "tuple/control_dependency"
    assert t1.op.control_inputs[0].name == "tuple/group_deps"
    assert t1.op.get_attr("_class") == [b"loc:@a"]


def test_softmax_axes(graph):
    x = af.placeholder(af.float32, [None, 3], name="x")
    assert af.nn.softmax(x).op.type == "Softmax"
    s0 = af.nn.softmax(x, axis=0, name="s0")
    assert (s0.op.type, s0.op.name) == ("Transpose", "s0")
    assert s0.shape.as_list() == [None, 3]
    assert af.nn.log_softmax(x, dim=-1).op.type == "LogSoftmax"


def test_nn_namespace(graph):
    x = af.placeholder(af.float32, [None, 3], name="x")
    for fn, op_type in [(af.nn.relu, "Relu"), (af.nn.relu6, "Relu6"), (af.nn.elu, "Elu"),
                        (af.nn.selu, "Selu"), (af.nn.softplus, "Softplus"),
                        (af.nn.softsign, "Softsign"), (af.nn.sigmoid, "Sigmoid"),
                        (af.nn.tanh, "Tanh")]:
        assert fn(x).op.type == op_type
    lr = af.nn.leaky_relu(x, alpha=0.1)
    assert lr.op.type == "LeakyRelu" and lr.op.get_attr("alpha") == pytest.approx(0.1)
    ba = af.nn.bias_add(x, [1.0, 2.0, 3.0])
    assert (ba.op.type, ba.op.get_attr("data_format")) == ("BiasAdd", b"NHWC")
    assert ba.op.inputs[1].op.name == "BiasAdd/bias"


def test_bitwise_namespace_and_operators(graph):
    # Node names, types and inputs as TF 2.21 builds them for the same calls.
    x = af.placeholder(af.int32, [2], name="Placeholder")
    built = [af.bitwise.bitwise_and(x, x), af.bitwise.bitwise_or(x, 1),
             af.bitwise.bitwise_xor(x, x, name="xx"), af.bitwise.invert(x),
             af.bitwise.left_shift(x, 2), af.bitwise.right_shift(x, x), x & x, ~x]
    assert [(t.op.name, t.op.type, _inputs(t)) for t in built] == [
        ("BitwiseAnd", "BitwiseAnd", ["Placeholder:0", "Placeholder:0"]),
        ("BitwiseOr", "BitwiseOr", ["Placeholder:0", "BitwiseOr/y:0"]),
        ("xx", "BitwiseXor", ["Placeholder:0", "Placeholder:0"]),
        ("Invert", "Invert", ["Placeholder:0"]),
        ("LeftShift", "LeftShift", ["Placeholder:0", "LeftShift/y:0"]),
        ("RightShift", "RightShift", ["Placeholder:0", "Placeholder:0"]),
        ("and/BitwiseAnd", "BitwiseAnd", ["Placeholder:0", "Placeholder:0"]),
        ("Invert_1", "Invert", ["Placeholder:0"]),
    ]
    assert all(t.shape.as_list() == [2] for t in built)


def test_gather_scatter_reverse_mirror_pad_builders(graph):
    x = af.placeholder(af.int32, [2], name="Placeholder")
    built = [af.scatter_nd([[0]], [1.0], [3]), af.gather_nd([1.0, 2.0], [[0]]),
             af.reverse(x, [0]), af.pad(x, [[1, 1]], mode="SYMMETRIC"),
             af.pad(x, [[1, 0]], mode="reflect")]
    assert [(t.op.name, t.op.type, _inputs(t)) for t in built] == [
        ("ScatterNd", "ScatterNd", ["ScatterNd/indices:0", "ScatterNd/updates:0",
                                    "ScatterNd/shape:0"]),
        ("GatherNd", "GatherNd", ["GatherNd/params:0", "GatherNd/indices:0"]),
        ("ReverseV2", "ReverseV2", ["Placeholder:0", "ReverseV2/axis:0"]),
        ("MirrorPad", "MirrorPad", ["Placeholder:0", "MirrorPad/paddings:0"]),
        ("MirrorPad_1", "MirrorPad", ["Placeholder:0", "MirrorPad_1/paddings:0"]),
    ]
    assert [t.shape.as_list() for t in built] == [[3], [1], [2], [4], [3]]
    assert built[3].op.get_attr("mode") == b"SYMMETRIC"
    assert built[4].op.get_attr("mode") == b"REFLECT"
    with pytest.raises(NotImplementedError, match="batch_dims"):
        af.gather_nd([[1.0]], [[0]], batch_dims=1)



def test_placeholders(graph):
    p = af.placeholder(af.float32, name="p")
    assert p.shape.rank is None
    assert p.op.node_def.attr["shape"].shape.unknown_rank
    d = af.placeholder_with_default([1.0, 2.0], [None], name="d")
    assert d.op.type == "PlaceholderWithDefault" and d.shape.as_list() == [None]
    assert d.op.inputs[0].op.name == "d/input"


# -- errors ----------------------------------------------------------------------------------

def test_dtype_mismatch_errors(graph):
    x = af.placeholder(af.float32, [3], name="x")
    i = af.placeholder(af.int32, [3], name="i")
    b = af.placeholder(af.bool, [3], name="b")
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type int32 that does not "
                                        "match type float32 of argument 'x'."):
        x + i
    with pytest.raises(TypeError, match="Input 'b' of 'MatMul' Op has type int32 that does "
                                        "not match type float32 of argument 'a'."):
        af.matmul(x, i)
    with pytest.raises(TypeError, match="Expected int32 passed to parameter 'y' of op 'Mul', "
                                        "got 1.5 of type 'float' instead."):
        i * 1.5
    with pytest.raises(TypeError, match="Input 'x' of 'LogicalAnd' Op has type float32 that "
                                        "does not match expected type of bool."):
        af.logical_and(x, b)
    with pytest.raises(TypeError, match=r"Tensors in list passed to 'values' of 'ConcatV2' Op "
                                        r"have types \[float32, int32\] that don't all match."):
        af.concat([x, i], 0)
    with pytest.raises(TypeError, match="Value passed to parameter 'features' has DataType bool "
                                        "not in list of allowed values"):
        af.nn.relu(b)
    with pytest.raises(TypeError, match="`x` and `y` must have the same dtype"):
        af.truediv(x, i)
