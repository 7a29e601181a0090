"""Hypothesis strategies for fuzz cases: GraphDefs TensorFlow wrote (tests/data) mutated
one to three times, and single registered ops with edge-valued inputs.

`graphdef_cases()` and `single_op_cases()` draw `FuzzCase`s; `MUTATIONS` names every
mutation kind (graph-level ones edit the GraphDef proto, byte-level ones its bytes).
Sizes that would make the harness itself allocate (synthesized feeds, number of
inputs) are capped here; sizes that aioflow must refuse (huge dims in attrs, shapes,
Const tensors, shape-valued inputs) are not: the runner's address-space cap turns an
unrefused bomb into a failed case.
"""

from __future__ import annotations

import functools
import json
import math
import pathlib

import ml_dtypes
import numpy as np
from fuzz_runner import FuzzCase
from hypothesis import strategies as st

from aioflow.framework import op_def_registry
from aioflow.proto import (
    attr_value_pb2,
    function_pb2,
    graph_pb2,
    node_def_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)

DATA = pathlib.Path(__file__).resolve().parent.parent / "data"
_MANIFEST = json.loads((DATA / "fixtures.json").read_text())
FIXTURES = sorted(_MANIFEST) + ["partition_two_cpus"]
REGISTERED_OPS = sorted(op_def_registry.registered_ops())

# -- edge values ----------------------------------------------------------------------

INT_EDGES = [0, 1, -1, 2, 3, -2, 7, 2**31 - 1, -(2**31), 2**31, 2**33, 2**62, 2**63 - 1, -(2**63)]
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.5, 0.5, math.nan, math.inf, -math.inf, 1e38, -1e308, 5e-324]
DIM_EDGES = [0, 1, 2, 3, -1, -2, 2**31 - 1, 2**33, 2**62, -(2**40)]
ODD_STRINGS = [b"", b"a", b"SAME", b"VALID", b"REFLECT", b"SYMMETRIC", b"CONSTANT", b"NHWC",
               b"NCHW", b"\xff\xfe\x00", "é名".encode(), b"x" * 300, b"loc:@nowhere"]
# Valid DataType enums, unknown ones, DT_INVALID, ref types (+100) and out-of-range ones.
VALUE_TYPES = [v.number for v in types_pb2.DataType.DESCRIPTOR.values if 0 < v.number < 100]
COMMON_TYPES = [types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_INT32, types_pb2.DT_INT64,
                types_pb2.DT_BOOL, types_pb2.DT_STRING, types_pb2.DT_HALF, types_pb2.DT_UINT8,
                types_pb2.DT_INT8, types_pb2.DT_COMPLEX64, types_pb2.DT_BFLOAT16,
                types_pb2.DT_UINT64]
ODD_TYPES = [0, 33, 99, 100, 101, 103, 107, 120, 200, 2**31 - 1, -1, -(2**31)]

_NP = {
    types_pb2.DT_FLOAT: np.float32, types_pb2.DT_DOUBLE: np.float64,
    types_pb2.DT_INT32: np.int32, types_pb2.DT_INT64: np.int64, types_pb2.DT_UINT8: np.uint8,
    types_pb2.DT_INT16: np.int16, types_pb2.DT_INT8: np.int8, types_pb2.DT_UINT16: np.uint16,
    types_pb2.DT_UINT32: np.uint32, types_pb2.DT_UINT64: np.uint64, types_pb2.DT_BOOL: np.bool_,
    types_pb2.DT_COMPLEX64: np.complex64, types_pb2.DT_COMPLEX128: np.complex128,
    types_pb2.DT_HALF: np.float16, types_pb2.DT_BFLOAT16: ml_dtypes.bfloat16,
    types_pb2.DT_STRING: object,
}


def dtype_enums(odd: bool = True) -> st.SearchStrategy[int]:
    """DataType enum values: mostly common ones, then every value type, then odd ones."""
    parts = [st.sampled_from(COMMON_TYPES), st.sampled_from(VALUE_TYPES)]
    if odd:
        parts.append(st.sampled_from(ODD_TYPES))
    return st.one_of(*parts)


EDGE_SHAPES = st.one_of(
    st.just(()), st.just((0,)), st.just((2, 0)),
    st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    st.lists(st.just(1), min_size=5, max_size=7).map(tuple),  # a wrong rank for most ops
    st.just((4096,)),
)


@st.composite
def edge_arrays(draw, enum: int, small_ints: bool = False, shape=None):
    """An array of DataType `enum` with edge contents and (unless `shape` is given) edge
    shapes: scalars, empty and wrong-rank arrays, NaN/inf, extremes. `small_ints` favours
    values that make sense as shapes, axes and indices (and still draws extremes)."""
    np_dtype = _NP.get(enum, np.float32)
    if shape is None:
        shape = draw(EDGE_SHAPES)
    size = int(np.prod(shape, dtype=np.int64))
    if np_dtype is object:
        values = draw(st.lists(st.sampled_from(ODD_STRINGS), min_size=size, max_size=size))
        return np.array(values, dtype=object).reshape(shape)
    kind = np.dtype(np_dtype).kind
    if kind == "b":
        values = draw(st.lists(st.booleans(), min_size=min(size, 8), max_size=min(size, 8)))
    elif kind in "iu":
        info = np.iinfo(np_dtype)
        pool = st.integers(0, 4) if small_ints else st.integers(-100, 100)
        edges = st.sampled_from([int(info.min), int(info.max), 0, -1, 1, -3])
        values = draw(st.lists(st.one_of(pool, pool, pool, edges), min_size=min(size, 8),
                               max_size=min(size, 8)))
        values = [min(max(v, int(info.min)), int(info.max)) for v in values]
    else:
        values = draw(st.lists(st.one_of(st.sampled_from(FLOAT_EDGES),
                                         st.floats(-10, 10, width=32)),
                               min_size=min(size, 8), max_size=min(size, 8)))
    flat = np.zeros(size, dtype=np_dtype)
    if size and values:
        with np.errstate(all="ignore"):
            flat[:] = np.resize(np.array(values).astype(np_dtype), size)
    return flat.reshape(shape)


def _shape_proto(dims, unknown_rank: bool = False) -> tensor_shape_pb2.TensorShapeProto:
    proto = tensor_shape_pb2.TensorShapeProto(unknown_rank=unknown_rank)
    for d in dims:
        proto.dim.add(size=d)
    return proto


@st.composite
def shape_protos(draw, huge: bool = True):
    """TensorShapeProtos: known, partly unknown (-1), unknown rank, negative and huge dims,
    and the inconsistent "unknown rank with dims"."""
    dims_pool = st.sampled_from(DIM_EDGES) if huge else st.integers(-1, 4)
    dims = draw(st.lists(st.one_of(st.integers(-1, 4), dims_pool), max_size=5))
    unknown_rank = draw(st.integers(0, 6)) == 0
    return _shape_proto(dims, unknown_rank)


def tensor_proto(array: np.ndarray, enum: int) -> tensor_pb2.TensorProto:
    """A TensorProto of `array` as DataType `enum` (content bytes; strings as string_val)."""
    proto = tensor_pb2.TensorProto(dtype=enum, tensor_shape=_shape_proto(array.shape))
    if array.dtype == object:
        proto.string_val.extend(bytes(v) for v in array.reshape(-1))
    elif array.size:
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    return proto


@st.composite
def tensor_protos(draw, enum: int | None = None):
    """TensorProtos: well-formed edge tensors, and malformed ones (content of the wrong
    length, value fields of the wrong dtype, huge or negative shapes with no content,
    odd dtypes)."""
    if enum is None:
        enum = draw(dtype_enums())
    array = draw(edge_arrays(enum if enum in _NP else types_pb2.DT_FLOAT))
    proto = tensor_proto(array, enum)
    flaw = draw(st.sampled_from(["none", "none", "none", "content", "fields", "shape",
                                 "empty-huge", "dtype"]))
    if flaw == "content":
        cut = draw(st.integers(0, max(len(proto.tensor_content) - 1, 0)))
        proto.tensor_content = proto.tensor_content[:cut] + draw(st.binary(max_size=5))
    elif flaw == "fields":
        proto.float_val.extend(draw(st.lists(st.sampled_from(FLOAT_EDGES), max_size=3)))
        proto.int64_val.extend(draw(st.lists(st.sampled_from(INT_EDGES), max_size=3)))
        proto.string_val.extend(draw(st.lists(st.sampled_from(ODD_STRINGS), max_size=2)))
        proto.bool_val.extend(draw(st.lists(st.booleans(), max_size=2)))
    elif flaw == "shape":
        proto.tensor_shape.CopyFrom(draw(shape_protos()))
    elif flaw == "empty-huge":
        proto.ClearField("tensor_content")
        proto.ClearField("string_val")
        proto.tensor_shape.CopyFrom(_shape_proto(draw(st.lists(st.sampled_from(
            [2**33, 2**31, 2**20, 2**62, 3]), min_size=1, max_size=3))))
    elif flaw == "dtype":
        proto.dtype = draw(st.sampled_from(ODD_TYPES + VALUE_TYPES))
    return proto


@st.composite
def attr_values(draw):
    """AttrValues of every kind, with edge contents (including an empty AttrValue and
    lists mixing kinds)."""
    kind = draw(st.sampled_from(["s", "i", "f", "b", "type", "shape", "tensor", "list_i",
                                 "list_type", "list_shape", "list_s", "list_f", "list_mixed",
                                 "list_empty", "func", "placeholder", "none"]))
    value = attr_value_pb2.AttrValue()
    if kind == "s":
        value.s = draw(st.sampled_from(ODD_STRINGS))
    elif kind == "i":
        value.i = draw(st.sampled_from(INT_EDGES))
    elif kind == "f":
        value.f = draw(st.sampled_from(FLOAT_EDGES))
    elif kind == "b":
        value.b = draw(st.booleans())
    elif kind == "type":
        value.type = draw(dtype_enums())
    elif kind == "shape":
        value.shape.CopyFrom(draw(shape_protos()))
    elif kind == "tensor":
        value.tensor.CopyFrom(draw(tensor_protos()))
    elif kind == "list_i":
        value.list.i.extend(draw(st.lists(st.sampled_from(INT_EDGES), max_size=5)))
    elif kind == "list_type":
        value.list.type.extend(draw(st.lists(dtype_enums(), max_size=4)))
    elif kind == "list_shape":
        value.list.shape.extend(draw(st.lists(shape_protos(), max_size=3)))
    elif kind == "list_s":
        value.list.s.extend(draw(st.lists(st.sampled_from(ODD_STRINGS), max_size=3)))
    elif kind == "list_f":
        value.list.f.extend(draw(st.lists(st.sampled_from(FLOAT_EDGES), max_size=3)))
    elif kind == "list_mixed":
        value.list.i.append(draw(st.sampled_from(INT_EDGES)))
        value.list.type.append(draw(dtype_enums()))
        value.list.f.append(draw(st.sampled_from(FLOAT_EDGES)))
    elif kind == "list_empty":
        value.list.SetInParent()
    elif kind == "func":
        value.func.name = draw(st.sampled_from(["f", "", "Identity", "missing_fn"]))
    elif kind == "placeholder":
        value.placeholder = draw(st.sampled_from(["T", "", "dtype"]))
    return value


# -- GraphDef mutations ---------------------------------------------------------------


@functools.cache
def _fixture(name: str) -> tuple[bytes, tuple, tuple, tuple]:
    data = (DATA / f"{name}.pb").read_bytes()
    with np.load(DATA / f"{name}.npz", allow_pickle=True) as npz:
        feeds = tuple((k[len("feed:"):], npz[k]) for k in npz.files if k.startswith("feed:"))
        fetches = tuple(k[len("fetch:"):] for k in npz.files if k.startswith("fetch:"))
    targets = tuple(_MANIFEST.get(name, {}).get("targets", []))
    return data, feeds, fetches, targets


def _pick_node(draw, gd, predicate=None):
    nodes = [n for n in gd.node if predicate is None or predicate(n)]
    if not nodes:
        return None
    return draw(st.sampled_from(nodes))


def _node_names(gd) -> list[str]:
    return [n.name for n in gd.node] or ["missing"]


@functools.cache
def _same_signature_ops() -> dict[str, list[str]]:
    """Ops grouped by their attr names and input/output counts: swapping one for another
    of its group keeps the node importable and tests the kernel, not the validation."""
    groups: dict[tuple, list[str]] = {}
    for name, op_def in op_def_registry.registered_ops().items():
        key = (tuple(sorted(a.name for a in op_def.attr)), len(op_def.input_arg),
               len(op_def.output_arg))
        groups.setdefault(key, []).append(name)
    return {name: sorted(group) for group in groups.values() for name in group}


def m_op_type(draw, gd, case):
    """Change an op type to one of the same signature, to any registered op, or to an
    unregistered name."""
    node = _pick_node(draw, gd)
    if node is not None:
        node.op = draw(st.one_of(
            st.sampled_from(_same_signature_ops().get(node.op, REGISTERED_OPS)),
            st.sampled_from(REGISTERED_OPS),
            st.sampled_from(["", "NotAnOp", "addv2", "Const\x00", "AddV2 ", "Ref", "_Arg"])))


def m_attr_drop(draw, gd, case):
    """Drop an attr."""
    node = _pick_node(draw, gd, lambda n: len(n.attr))
    if node is not None:
        del node.attr[draw(st.sampled_from(sorted(node.attr)))]


def m_attr_add(draw, gd, case):
    """Add an attr: one the OpDef has, a common attr name, an unknown or internal one."""
    node = _pick_node(draw, gd)
    if node is None:
        return
    reg = op_def_registry.get_registration(node.op)
    names = [a.name for a in reg.op_def.attr] if reg is not None else []
    name = draw(st.one_of(st.sampled_from(names or ["T"]), st.sampled_from(names or ["T"]),
                          st.sampled_from(
        ["T", "dtype", "value", "shape", "N", "bogus", "", "_class", "_output_shapes",
         "_kernel", "frame_name", "parallel_iterations"])))
    node.attr[name].CopyFrom(draw(attr_values()))


def m_attr_retype(draw, gd, case):
    """Replace an attr's value by an AttrValue of any kind (often the wrong one)."""
    node = _pick_node(draw, gd, lambda n: len(n.attr))
    if node is not None:
        node.attr[draw(st.sampled_from(sorted(node.attr)))].CopyFrom(draw(attr_values()))


def m_dtype(draw, gd, case):
    """Change a type attr (T, dtype, DstT, out_type, ...) or one entry of a list(type)."""
    def typed(n):
        return any(v.WhichOneof("value") == "type" or len(v.list.type) for v in n.attr.values())
    node = _pick_node(draw, gd, typed)
    if node is None:
        return
    names = sorted(k for k, v in node.attr.items()
                   if v.WhichOneof("value") == "type" or len(v.list.type))
    value = node.attr[draw(st.sampled_from(names))]
    if value.WhichOneof("value") == "type":
        value.type = draw(dtype_enums())
    else:
        value.list.type[draw(st.integers(0, len(value.list.type) - 1))] = draw(dtype_enums())


def m_shape(draw, gd, case):
    """Change a shape attr (Placeholder shape, element_shape, _output_shapes) or the
    shape of a Const's tensor without touching its content."""
    def shaped(n):
        return any(v.WhichOneof("value") in ("shape", "tensor") or len(v.list.shape)
                   for v in n.attr.values())
    node = _pick_node(draw, gd, shaped)
    if node is None:
        return
    names = sorted(k for k, v in node.attr.items()
                   if v.WhichOneof("value") in ("shape", "tensor") or len(v.list.shape))
    value = node.attr[draw(st.sampled_from(names))]
    kind = value.WhichOneof("value")
    if kind == "shape":
        value.shape.CopyFrom(draw(shape_protos()))
    elif kind == "tensor":
        value.tensor.tensor_shape.CopyFrom(draw(shape_protos()))
    else:
        value.list.shape[draw(st.integers(0, len(value.list.shape) - 1))].CopyFrom(
            draw(shape_protos()))


def m_const_value(draw, gd, case):
    """Replace a Const's value by an edge or malformed tensor (same dtype, mostly)."""
    node = _pick_node(draw, gd, lambda n: n.op == "Const")
    if node is None:
        return
    enum = node.attr["dtype"].type if draw(st.integers(0, 3)) else None
    node.attr["value"].tensor.CopyFrom(draw(tensor_protos(enum)))


_BAD_INDICES = ["99", "-1", "", "1.5", "\u0663", "\u00b2", "0x1", "+1", " 1", "1 ", "00", "01",
                "9" * 25, "0:0", "\uff11", "१"]


def m_input_name(draw, gd, case):
    """Rewrite an input: unknown node, bad output index (out of range, negative,
    non-ASCII digits, signs, spaces), odd control inputs, another node's output."""
    node = _pick_node(draw, gd, lambda n: len(n.input))
    if node is None:
        return
    i = draw(st.integers(0, len(node.input) - 1))
    other = draw(st.sampled_from(_node_names(gd)))
    node.input[i] = draw(st.one_of(
        st.sampled_from(_BAD_INDICES).map(lambda s: f"{other}:{s}"),
        st.sampled_from(["^", "^^x", "", ":", ":0", "nonexistent", "nonexistent:0",
                         f"^{other}:0", f"{other}:0:0", f"^{other}", other, f"{other}:1",
                         f"{other}:2"]),
    ))


def m_input_order(draw, gd, case):
    """Reorder, drop, duplicate or add inputs; move a control input before data inputs."""
    node = _pick_node(draw, gd)
    if node is None:
        return
    inputs = list(node.input)
    how = draw(st.sampled_from(["swap", "drop", "dup", "add", "ctrl_first", "add_ctrl"]))
    if how == "swap" and len(inputs) >= 2:
        i, j = draw(st.integers(0, len(inputs) - 1)), draw(st.integers(0, len(inputs) - 1))
        inputs[i], inputs[j] = inputs[j], inputs[i]
    elif how == "drop" and inputs:
        inputs.pop(draw(st.integers(0, len(inputs) - 1)))
    elif how == "dup" and inputs:
        inputs.insert(0, inputs[draw(st.integers(0, len(inputs) - 1))])
    elif how == "add":
        inputs.append(f"{draw(st.sampled_from(_node_names(gd)))}:0")
    elif how in ("ctrl_first", "add_ctrl"):
        inputs.insert(0 if how == "ctrl_first" else len(inputs),
                      f"^{draw(st.sampled_from(_node_names(gd)))}")
    del node.input[:]
    node.input.extend(inputs)


def m_node_name(draw, gd, case):
    """Rename a node (empty, a duplicate, odd characters) or duplicate a whole node."""
    node = _pick_node(draw, gd)
    if node is None:
        return
    if draw(st.booleans()):
        gd.node.add().CopyFrom(node)
        return
    node.name = draw(st.sampled_from(
        _node_names(gd) + ["", "a:b", "^a", "a/", "/a", "a b", "名前", "x" * 300, "a:0", "_"]))


def m_drop_node(draw, gd, case):
    """Delete a node (its consumers keep naming it)."""
    if gd.node:
        del gd.node[draw(st.integers(0, len(gd.node) - 1))]


def m_cycle(draw, gd, case):
    """Make a node consume (data or control) one of its own transitive consumers."""
    node = _pick_node(draw, gd)
    if node is None:
        return
    consumers: dict[str, list[str]] = {}
    for n in gd.node:
        for text in n.input:
            src = text.lstrip("^").split(":")[0]
            consumers.setdefault(src, []).append(n.name)
    reach, todo = [], [node.name]
    while todo and len(reach) < 50:
        for c in consumers.get(todo.pop(), []):
            if c not in reach:
                reach.append(c)
                todo.append(c)
    target = draw(st.sampled_from(reach or [node.name]))
    text = draw(st.sampled_from([f"{target}:0", f"^{target}", target]))
    if node.input and draw(st.booleans()):
        node.input[draw(st.integers(0, len(node.input) - 1))] = text
    else:
        node.input.append(text)


_CF_OPS = ("Enter", "RefEnter", "Exit", "RefExit", "Merge", "RefMerge", "Switch", "RefSwitch",
           "NextIteration", "RefNextIteration", "LoopCond")


def m_control_flow(draw, gd, case):
    """Edit v1 control flow: Enter's parallel_iterations (0, negative, huge), is_constant
    and frame_name (another frame's, empty, its parent's); Merge/Switch input order; a
    NextIteration or LoopCond fed from another node; one control-flow op for another."""
    node = _pick_node(draw, gd, lambda n: n.op in _CF_OPS)
    if node is None:
        return
    frames = sorted({n.attr["frame_name"].s for n in gd.node if n.op.endswith("Enter")})
    how = draw(st.sampled_from(["parallel_iterations", "is_constant", "frame_name",
                                "swap_inputs", "rewire", "op"]))
    if how == "parallel_iterations" and node.op.endswith("Enter"):
        node.attr["parallel_iterations"].i = draw(st.sampled_from(
            [0, -1, 1, 2, 2**31 - 1, 2**40, -(2**63)]))
    elif how == "is_constant" and node.op.endswith("Enter"):
        node.attr["is_constant"].b = not node.attr["is_constant"].b
    elif how == "frame_name" and node.op.endswith("Enter"):
        node.attr["frame_name"].s = draw(st.sampled_from(frames + [b"", b"other", b"\xff"]))
    elif how == "swap_inputs" and len(node.input) >= 2:
        node.input[0], node.input[1] = node.input[1], node.input[0]
    elif how == "rewire" and node.input:
        node.input[0] = f"{draw(st.sampled_from(_node_names(gd)))}:0"
    else:
        node.op = draw(st.sampled_from(_CF_OPS))


def m_device(draw, gd, case):
    """Set a node's device: the second CPU, unknown devices, garbage."""
    node = _pick_node(draw, gd)
    if node is not None:
        node.device = draw(st.sampled_from(
            ["/device:CPU:1", "/device:CPU:1", "/device:CPU:0", "/device:GPU:0", "/cpu:0",
             "/job:localhost/replica:0/task:0/device:CPU:1", "/job:worker/task:3", "garbage",
             "/device:CPU:-1", "/device:CPU:99999999999999999999", "::", "/device:XLA_CPU:0",
             "/device:CPU:*", ""]))


def m_versions(draw, gd, case):
    """Change the GraphDef's versions (producer, min_consumer, bad_consumers)."""
    gd.versions.producer = draw(st.sampled_from([0, 1, 27, 2000, 2**31 - 1, -1]))
    gd.versions.min_consumer = draw(st.sampled_from([0, 12, 2000, 2**31 - 1, -1]))
    if draw(st.booleans()):
        gd.versions.bad_consumers.append(draw(st.sampled_from([0, 1, 2**31 - 1, -5])))


def m_library(draw, gd, case):
    """Add a function to the library (often malformed) and call it by op name."""
    fn = function_pb2.FunctionDef()
    fn.signature.name = draw(st.sampled_from(["f", "AddV2", "", "Identity_fn"]))
    if draw(st.booleans()):
        fn.signature.input_arg.add(name="x", type=types_pb2.DT_FLOAT)
        fn.signature.output_arg.add(name="y", type=types_pb2.DT_FLOAT)
        fn.ret["y"] = draw(st.sampled_from(["x", "missing:output:0", "x:0"]))
    gd.library.function.append(fn)
    node = _pick_node(draw, gd)
    if node is not None and draw(st.booleans()):
        node.op = fn.signature.name


def m_feeds(draw, gd, case):
    """Feed edge values (wrong dtype, shape or rank, empty, NaN/inf, extremes, strings,
    and JSON values NumPy cannot make an array of)."""
    if not case.feeds:
        return
    name = draw(st.sampled_from(sorted(case.feeds)))
    enum = draw(dtype_enums(odd=False))
    if draw(st.integers(0, 4)) == 0:
        case.feeds[name] = draw(st.sampled_from(
            [[[1.0], [1.0, 2.0]], "text", ["\u00ff"], [], [[[]]], 2**70, -(2**64), True]))
    else:
        case.feeds[name] = draw(edge_arrays(enum))


def m_fetch(draw, gd, case):
    """Fetch intermediate tensors (inside loops and conds too) and feed one."""
    names = _node_names(gd)
    case.fetches = [f"{draw(st.sampled_from(names))}:{draw(st.integers(0, 2))}"
                    for _ in range(draw(st.integers(1, 3)))]
    case.targets = draw(st.lists(st.sampled_from(names), max_size=1))
    if draw(st.booleans()):
        case.feeds[f"{draw(st.sampled_from(names))}:0"] = draw(edge_arrays(
            draw(dtype_enums(odd=False))))


def b_truncate(draw, data: bytes) -> bytes:
    """Cut the serialized GraphDef short."""
    return data[:draw(st.integers(0, max(len(data) - 1, 0)))]


def b_corrupt(draw, data: bytes) -> bytes:
    """Overwrite, insert or delete a few bytes of the serialized GraphDef."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(buf) - 1, 0)))
        how = draw(st.sampled_from(["set", "insert", "delete"]))
        if how == "set" and buf:
            buf[at] = draw(st.integers(0, 255))
        elif how == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif buf:
            del buf[at:at + draw(st.integers(1, 4))]
    return bytes(buf)


GRAPH_MUTATIONS = {
    "op_type": m_op_type, "attr_drop": m_attr_drop, "attr_add": m_attr_add,
    "attr_retype": m_attr_retype, "dtype": m_dtype, "shape": m_shape,
    "const_value": m_const_value, "input_name": m_input_name, "input_order": m_input_order,
    "node_name": m_node_name, "drop_node": m_drop_node, "cycle": m_cycle, "device": m_device,
    "control_flow": m_control_flow,
    "versions": m_versions, "library": m_library, "feeds": m_feeds, "fetch": m_fetch,
}
BYTE_MUTATIONS = {"truncate": b_truncate, "corrupt": b_corrupt}
MUTATIONS = sorted(GRAPH_MUTATIONS) + sorted(BYTE_MUTATIONS)


@st.composite
def graphdef_cases(draw, kinds=None, fixtures=None):
    """A fixture GraphDef with one to three mutations drawn from `kinds` (all by default),
    its feeds (edge values where mutated) and fetches; sometimes run on two CPUs."""
    kinds = sorted(kinds if kinds is not None else MUTATIONS)
    name = draw(st.sampled_from(sorted(fixtures or FIXTURES)))
    data, feeds, fetches, targets = _fixture(name)
    case = FuzzCase("", b"", dict(feeds), list(fetches), list(targets))
    gd = graph_pb2.GraphDef()
    gd.ParseFromString(data)
    applied = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=3))
    for kind in applied:
        if kind in GRAPH_MUTATIONS:
            GRAPH_MUTATIONS[kind](draw, gd, case)
    data = gd.SerializeToString(deterministic=True)
    for kind in applied:
        if kind in BYTE_MUTATIONS:
            data = BYTE_MUTATIONS[kind](draw, data)
    case.kind = f"graphdef:{name}:{'+'.join(applied)}"
    case.graph_def = data
    case.cpus = 2 if name == "partition_two_cpus" or draw(st.integers(0, 4)) == 0 else 1
    return case


# -- single ops -----------------------------------------------------------------------


def _allowed(attr_def) -> list:
    if attr_def.HasField("allowed_values"):
        lst = attr_def.allowed_values.list
        return list(lst.type) or list(lst.s) or list(lst.i)
    return []


@st.composite
def _attr_for(draw, attr_def, op_name: str):
    """An AttrValue of the attr's own type, satisfying its allowed values and minimum
    (N stays small: the harness builds one input per element)."""
    kind, allowed, value = attr_def.type, _allowed(attr_def), attr_value_pb2.AttrValue()
    minimum = attr_def.minimum if attr_def.has_minimum else 0
    if kind == "type":
        value.type = draw(st.sampled_from(allowed)) if allowed else draw(dtype_enums(odd=False))
    elif kind == "list(type)":
        pool = st.sampled_from(allowed) if allowed else st.sampled_from(COMMON_TYPES)
        value.list.type.extend(draw(st.lists(pool, min_size=minimum, max_size=minimum + 3)))
    elif kind == "int":
        if attr_def.has_minimum:
            value.i = draw(st.integers(minimum, minimum + 3))
        else:
            value.i = draw(st.one_of(st.integers(-2, 4), st.sampled_from(INT_EDGES)))
    elif kind == "float":
        value.f = draw(st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(-2, 2)))
    elif kind == "bool":
        value.b = draw(st.booleans())
    elif kind == "string":
        value.s = draw(st.sampled_from(allowed)) if allowed else draw(st.sampled_from(
            ODD_STRINGS + [b"frame", b"loc:@x", b"/job:localhost/replica:0/task:0/device:CPU:0"]))
    elif kind == "shape":
        value.shape.CopyFrom(draw(shape_protos()))
    elif kind == "tensor":
        value.tensor.CopyFrom(draw(tensor_protos()))
    elif kind == "list(int)":
        value.list.i.extend(draw(st.lists(st.one_of(st.integers(-3, 4),
                                                    st.sampled_from(INT_EDGES)),
                                          min_size=minimum, max_size=minimum + 4)))
    elif kind == "list(shape)":
        value.list.shape.extend(draw(st.lists(shape_protos(), min_size=minimum, max_size=3)))
    elif kind == "list(float)":
        value.list.f.extend(draw(st.lists(st.sampled_from(FLOAT_EDGES), max_size=3)))
    elif kind == "list(string)":
        value.list.s.extend(draw(st.lists(st.sampled_from(ODD_STRINGS), max_size=3)))
    elif kind == "func":
        value.func.name = "f"
    return value


def _input_types(node, op_def, arg) -> list[int]:
    """The DataType enums of one input arg of `node` (its attrs, else the defaults)."""
    def attr(name):
        if name in node.attr:
            return node.attr[name]
        for a in op_def.attr:
            if a.name == name and a.HasField("default_value"):
                return a.default_value
        return None

    if arg.number_attr:
        n = attr(arg.number_attr)
        enum = attr(arg.type_attr).type if arg.type_attr and attr(arg.type_attr) else arg.type
        return [enum or types_pb2.DT_FLOAT] * (min(max(n.i, 0), 6) if n is not None else 1)
    if arg.type_list_attr:
        types = attr(arg.type_list_attr)
        return list(types.list.type)[:6] if types is not None else []
    if arg.type_attr:
        value = attr(arg.type_attr)
        return [value.type if value is not None else types_pb2.DT_FLOAT]
    return [arg.type]


# Input args holding shapes, axes, sizes or indices: small values, vector or scalar.
_VECTOR_ARGS = {"dims", "shape", "perm", "multiples", "begin", "end", "strides", "size",
                "size_splits", "element_shape", "lengths", "reduction_indices", "indices"}
_SCALAR_ARGS = {"axis", "dim", "split_dim", "index", "depth", "start", "limit", "delta",
                "num_segments", "shift"}
BASE_SHAPES = [(), (1,), (4,), (0,), (2, 2), (3, 3), (2, 3), (2, 2, 2), (1, 2, 2, 1)]


@st.composite
def _input_value(draw, arg_name: str, enum: int, base_shape):
    """A value for one input: shapes/axes small, other inputs mostly of the case's
    common shape (so that binary and matrix ops get compatible operands)."""
    if arg_name in _VECTOR_ARGS or arg_name in _SCALAR_ARGS or arg_name == "paddings":
        if draw(st.integers(0, 4)) == 0:
            return draw(edge_arrays(enum, small_ints=True))
        if arg_name == "paddings":
            shape = (len(base_shape), 2)
        elif arg_name in _SCALAR_ARGS:
            shape = ()
        else:
            shape = (draw(st.integers(1, 3)),)
        return draw(edge_arrays(enum, small_ints=True, shape=shape))
    shape = base_shape if draw(st.integers(0, 3)) else None
    return draw(edge_arrays(enum, shape=shape))


@st.composite
def single_op_cases(draw, ops=None):
    """One registered op with attrs satisfying its OpDef (defaults sometimes left out)
    and inputs that are fed Placeholders or Consts holding edge values."""
    op_name = draw(st.sampled_from(sorted(ops or REGISTERED_OPS)))
    op_def = op_def_registry.get(op_name)
    gd = graph_pb2.GraphDef()
    node = node_def_pb2.NodeDef(name="op", op=op_name)
    for attr_def in op_def.attr:
        if attr_def.HasField("default_value") and draw(st.integers(0, 3)) == 0:
            continue  # leave it to the default
        node.attr[attr_def.name].CopyFrom(draw(_attr_for(attr_def, op_name)))
    if op_name == "Const" and draw(st.integers(0, 3)):
        node.attr["dtype"].type = node.attr["value"].tensor.dtype
    base_shape = draw(st.sampled_from(BASE_SHAPES))
    feeds = {}
    count = 0
    for arg in op_def.input_arg:
        for enum in _input_types(node, op_def, arg):
            name = f"in{count}"
            count += 1
            base = enum - 100 if enum > 100 else enum
            value = draw(_input_value(arg.name, base if base in _NP else types_pb2.DT_FLOAT,
                                      base_shape))
            inp = gd.node.add(name=name)
            inp.attr["dtype"].type = base
            if base in _NP and draw(st.booleans()):
                inp.op = "Placeholder"
                feeds[f"{name}:0"] = value
            else:
                inp.op = "Const"
                inp.attr["value"].tensor.CopyFrom(tensor_proto(value, base))
            node.input.append(f"{name}:0")
    gd.node.append(node)
    return FuzzCase(f"single_op:{op_name}", gd.SerializeToString(deterministic=True), feeds,
                    [f"op:{i}" for i in range(4)], ["op"])
