"""import_graph_def and the Session's GraphDef -> Graph construction refuse what TF 2.21
refuses, with TF's error classes and words, and nothing in a GraphDef makes them build a
huge value or list before refusing it (the hardening issue's import-validation findings).
"TF:" notes say what TF 2.21 does with the same GraphDef."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow as af
from aioflow.framework import device_spec, errors, node_def_util, tensor_util
from aioflow.framework.op_def_library import apply_op
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.proto import graph_pb2, tensor_pb2

MiB = 1 << 20


def const(name, shape=(), values="float_val: 1.0", dtype="DT_FLOAT", device=""):
    dims = "".join(f" dim {{ size: {d} }}" for d in shape)
    where = f' device: "{device}"' if device else ""
    return (f'node {{ name: "{name}" op: "Const"{where} '
            f'attr {{ key: "dtype" value {{ type: {dtype} }} }} attr {{ key: "value" value '
            f'{{ tensor {{ dtype: {dtype} tensor_shape {{{dims} }} {values} }} }} }} }}\n')


def placeholder(name, dtype="DT_FLOAT", shape=None):
    if shape is None:
        return f'node {{ name: "{name}" op: "Placeholder" attr {{ key: "dtype" value ' \
               f'{{ type: {dtype} }} }} }}\n'
    dims = "".join(f" dim {{ size: {d} }}" for d in shape)
    return (f'node {{ name: "{name}" op: "Placeholder" attr {{ key: "dtype" value '
            f'{{ type: {dtype} }} }} attr {{ key: "shape" value {{ shape {{{dims} }} }} }} }}\n')


def node(name, op, inputs=(), **attrs):
    """A NodeDef in text form; attrs as text ("type: DT_FLOAT", "i: 3")."""
    text = "".join(f' input: "{i}"' for i in inputs)
    text += "".join(f' attr {{ key: "{k}" value {{ {v} }} }}' for k, v in attrs.items())
    return f'node {{ name: "{name}" op: "{op}"{text} }}\n'


def identity(name, src):
    return node(name, "Identity", [src], T="type: DT_FLOAT")


def parse(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(text, graph_pb2.GraphDef())


def import_text(text, **kwargs):
    """Import into a fresh graph; the graph."""
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(parse(text) if isinstance(text, str) else text, name="", **kwargs)
    return graph


def refused(text, *fragments, cls=ValueError, **kwargs):
    """import_graph_def raises `cls` with every fragment in its message; the message."""
    with pytest.raises(cls) as info:
        import_text(text, **kwargs)
    for fragment in fragments:
        assert fragment in str(info.value)
    return str(info.value)


def refused_by_session_path(text, *fragments):
    """The runtime's construction (Session extend) raises InvalidArgumentError too."""
    with pytest.raises(errors.InvalidArgumentError) as info:
        convert_graph_def_to_graph(parse(text))
    for fragment in fragments:
        assert fragment in str(info.value)


def peak_bytes(fn) -> int:
    """The peak of memory traced while `fn` runs (NumPy's buffers included)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def while_loop_graph_def(parallel_iterations=10) -> graph_pb2.GraphDef:
    graph = af.Graph()
    with graph.as_default():
        i = af.constant(0)
        af.while_loop(lambda i: i < 3, lambda i: i + 1, [i],
                      parallel_iterations=parallel_iterations)
    return graph.as_graph_def()


# -- 1. import bombs -------------------------------------------------------------------------

def test_const_shape_comes_from_the_proto_not_from_building_the_value():
    # Was: the Const shape function built the value: [2**30] took 4.1 s and 4.1 GB.
    # TF: imports at once. 2**24 floats would be 64 MiB if built.
    text = const("c", [2**24])
    holder = {}
    peak = peak_bytes(lambda: holder.setdefault("g", import_text(text)))
    assert peak < 4 * MiB
    assert holder["g"].get_tensor_by_name("c:0").shape.as_list() == [2**24]


def test_const_larger_than_memory_imports():
    # Was: raw MemoryError at import for [2**33]. TF: imports; running it fails.
    start = time.perf_counter()
    graph = import_text(const("c", [2**46]))
    assert time.perf_counter() - start < 2.0
    assert graph.get_tensor_by_name("c:0").shape.as_list() == [2**46]


async def test_running_a_const_larger_than_memory_is_invalid_argument():
    # TF: InvalidArgumentError "Cannot parse tensor from proto: ..." (never MemoryError).
    graph = import_text(const("c", [2**46]))
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Cannot parse tensor from proto"):
            await sess.run("c:0")


async def test_running_a_const_with_a_bad_encoding_is_invalid_argument():
    # tensor_content of the wrong size, an unknown tensor dtype: TF's Const kernel words.
    bad_content = const("c", [3], 'tensor_content: "abc"')
    bad_dtype = const("c", [], "").replace("tensor { dtype: DT_FLOAT", "tensor { dtype: 99")
    for text in (bad_content, bad_dtype):
        async with af.Session(graph=import_text(text)) as sess:
            with pytest.raises(errors.InvalidArgumentError, match="Cannot parse tensor from"):
                await sess.run("c:0")


def test_make_ndarray_too_big_is_resource_exhausted():
    for dims in ("dim { size: 70368744177664 }",
                 "dim { size: 1099511627776 } dim { size: 1099511627776 }"):
        proto = text_format.Parse(f"dtype: DT_FLOAT tensor_shape {{ {dims} }} float_val: 1",
                                  tensor_pb2.TensorProto())
        with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor"):
            tensor_util.make_ndarray(proto)


@pytest.mark.parametrize("shape, fragment", [
    ([-5], "Shape [-5] is not fully defined"),
    ([2**40, 2**40], "Shape [1099511627776,1099511627776] is too large (more than 2**63 - 1 "
                     "entries)"),
])
def test_const_shape_that_no_tensor_has_is_refused(shape, fragment):
    # TF: ValueError with these words at import.
    refused(const("c", shape), fragment)


def test_shape_n_with_a_huge_n_is_refused_before_building_its_outputs():
    # Was: 8.7 s and 1.26 GB before rejecting. TF: rejects (listing 4M types, in 0.5 s).
    text = const("c", [], "int_val: 1", "DT_INT32") + node(
        "s", "ShapeN", ["c"], N="i: 4194304", T="type: DT_INT32", out_type="type: DT_INT32")
    start = time.perf_counter()
    peak = peak_bytes(lambda: refused(
        text, "NodeDef expected inputs 'int32, int32,", "(4194304 in all)' do not match 1 "
              "inputs specified; Op<name=ShapeN>"))
    assert time.perf_counter() - start < 2.0
    assert peak < 4 * MiB


@pytest.mark.parametrize("op, n", [("Pack", 2**31), ("Pack", 2**40), ("AddN", 2**40)])
def test_number_attr_beyond_int32_is_refused(op, n):
    # Was: MemoryError. TF: ValueError "Number of outputs is too big: N".
    attrs = {"N": f"i: {n}", "T": "type: DT_FLOAT"}
    if op == "Pack":
        attrs["axis"] = "i: 0"
    refused(const("c") + node("s", op, ["c"], **attrs), f"Number of outputs is too big: {n}")


@pytest.mark.parametrize("text", [
    const("a", [], "int_val: 0", "DT_INT32") + const("c", [4]) + node(
        "s", "Split", ["a", "c"], num_split=f"i: {2**40}", T="type: DT_FLOAT"),
    const("c", [4]) + node("s", "Unpack", ["c"], num=f"i: {2**40}", T="type: DT_FLOAT",
                           axis="i: 0"),
])
def test_output_count_beyond_int32_is_refused(text):
    # TF: ValueError "Number of outputs is too big: 1099511627776".
    refused(text, f"Number of outputs is too big: {2**40}")


def test_outputs_no_input_accounts_for_are_limited():
    # A deliberate limit: TF spends minutes and > 17 GB on Unpack(num=2**28) of an
    # unknown-shape input; aioflow refuses more than 2**20 outputs beyond the inputs.
    text = placeholder("x") + node("s", "Unpack", ["x"], num=f"i: {2**21}",
                                   T="type: DT_FLOAT", axis="i: 0")
    refused(text, f"Number of outputs is too big: {2**21}", "at most 1048576 outputs")
    refused_by_session_path(text, "Number of outputs is too big")


def test_python_builders_refuse_too_many_outputs(graph):
    x = af.placeholder(af.float32)
    with pytest.raises(ValueError, match=f"Number of outputs is too big: {2**40}"):
        apply_op("Unpack", value=x, num=2**40)
    with pytest.raises(ValueError, match="Number of outputs is too big"):
        apply_op("Unpack", value=x, num=2**21)


@pytest.mark.parametrize("shape_input", [
    const("shape", [2**30], "int_val: 1", "DT_INT32"),
    const("dims", [1], "int_val: 268435456", "DT_INT32") + const("one", [], "int_val: 1",
                                                                  "DT_INT32")
    + node("shape", "Fill", ["dims", "one"], T="type: DT_INT32", index_type="type: DT_INT32"),
])
def test_shape_inference_never_builds_a_huge_constant(shape_input):
    # A Reshape whose shape input is a 2**30-element Const, or a Fill of 2**28 elements:
    # their values are never built to infer Reshape's shape (TF: imports at once).
    text = placeholder("x") + shape_input + node(
        "r", "Reshape", ["x", "shape"], T="type: DT_FLOAT", Tshape="type: DT_INT32")
    holder = {}
    peak = peak_bytes(lambda: holder.setdefault("g", import_text(text)))
    assert peak < 16 * MiB
    assert holder["g"].get_tensor_by_name("r:0").shape.rank in (None, 1)


# -- 2. raw Python exceptions ----------------------------------------------------------------

@pytest.mark.parametrize("enum, fragment", [
    (99, "AttrValue has invalid DataType enum: 99\n\t for attr 'dtype'"),
    (-5, "AttrValue has invalid DataType enum: -5"),
    (0, "AttrValue has invalid DataType\n\t for attr 'dtype'"),
    # TF knows float8_e5m2 and imports it; aioflow has no such type and says so.
    (24, "AttrValue has DataType float8_e5m2 (enum 24), which aioflow does not support"),
])
def test_unknown_data_type_enum_is_a_value_error(enum, fragment):
    # Was: TypeError from dtypes.as_dtype. TF: ValueError with these words.
    text = node("p", "Placeholder", dtype=f"type: {enum}")
    refused(text, fragment)
    refused_by_session_path(text, fragment)


def test_unknown_data_type_in_a_type_list_is_a_value_error():
    text = const("c") + node("i", "IdentityN", ["c"], T="list { type: 99 }")
    refused(text, "AttrValue has invalid DataType enum: 99\n\t for attr 'T'")


@pytest.mark.parametrize("dim", [const("d", [0], "", "DT_INT32"),
                                 const("d", [2], "int_val: 0 int_val: 1", "DT_INT32")])
def test_expand_dims_with_a_dim_of_other_than_one_value(dim):
    # Was: IndexError. TF: ValueError "'dim' input must be a tensor with a single value".
    text = placeholder("x", shape=[2]) + dim + node(
        "e", "ExpandDims", ["x", "d"], T="type: DT_FLOAT", Tdim="type: DT_INT32")
    refused(text, "'dim' input must be a tensor with a single value")


def test_transpose_perm_out_of_range_is_a_value_error():
    # Was: IndexError. TF: "perm dim 5 is out of range of input rank 2".
    text = placeholder("x", shape=[2, 3]) + const(
        "perm", [2], "int_val: 0 int_val: 5", "DT_INT32") + node(
        "t", "Transpose", ["x", "perm"], T="type: DT_FLOAT", Tperm="type: DT_INT32")
    refused(text, "perm dim 5 is out of range of input rank 2")


@pytest.mark.parametrize("batch_dims, fragment", [
    (-2**63, f"Attr batch_dims has value {-2**63} out of range for an int32"),
    (2**40, f"Attr batch_dims has value {2**40} out of range for an int32"),
    (-5, "Shape must be at least rank 5 but is rank 1"),
])
def test_gather_batch_dims_out_of_range_is_a_value_error(batch_dims, fragment):
    # Was: OverflowError (or a huge list). TF: ValueError with these words.
    text = (placeholder("params", shape=[2]) + placeholder("indices", "DT_INT32", [1])
            + placeholder("axis", "DT_INT32", [])
            + node("g", "GatherV2", ["params", "indices", "axis"], Tparams="type: DT_FLOAT",
                   Tindices="type: DT_INT32", Taxis="type: DT_INT32",
                   batch_dims=f"i: {batch_dims}"))
    refused(text, fragment)


def test_a_const_whose_value_disagrees_with_its_dtype_has_no_known_value():
    # Was: OverflowError (an int32 Const holding a float inf read as reduction axes). TF:
    # imports it, and its Const kernel refuses it at run ("Type mismatch").
    axis = const("axis", [1], "float_val: inf").replace(
        'key: "dtype" value { type: DT_FLOAT }', 'key: "dtype" value { type: DT_INT32 }')
    text = placeholder("x", shape=[2, 3]) + axis + node(
        "s", "Sum", ["x", "axis"], T="type: DT_FLOAT", Tidx="type: DT_INT32")
    assert import_text(text).get_tensor_by_name("s:0").shape.rank is None


def test_slice_begin_longer_than_the_rank_imports():
    # Was: IndexError. TF: imports it (the kernel refuses it at run).
    text = placeholder("x", shape=[]) + const("b", [2], "int_val: 0 int_val: 0", "DT_INT32") \
        + const("s", [2], "int_val: -1 int_val: -1", "DT_INT32") + node(
            "t", "Slice", ["x", "b", "s"], T="type: DT_FLOAT", Index="type: DT_INT32")
    import_text(text)


# -- 3. graphs TF refuses at import ----------------------------------------------------------

@pytest.mark.parametrize("text, count", [
    (identity("a", "b") + identity("b", "a"), 2),
    (identity("a", "a"), 1),
    (const("c") + identity("a", "c") + identity("b", "d") + identity("d", "b")
     + identity("e", "d"), 3),
])
def test_cycle_outside_a_while_loop_is_refused(text, count):
    # Was: imported, then every run failed. TF: ValueError "N nodes in a cycle".
    message = refused(text, f"{count} nodes in a cycle")
    assert "'b'" in message or "'a'" in message
    refused_by_session_path(text, "cycle")


def test_a_cycle_through_next_iteration_and_merge_imports():
    graph = import_text(while_loop_graph_def())
    assert graph.get_operation_by_name("while/Merge").type == "Merge"


def test_a_cycle_through_next_iteration_but_not_merge_is_refused():
    # TF only lets a Merge wait for one input; a NextIteration feeding anything else in a
    # cycle is a cycle.
    text = (const("c") + node("n", "NextIteration", ["a"], T="type: DT_FLOAT")
            + node("a", "AddV2", ["c", "n"], T="type: DT_FLOAT"))
    refused(text, "2 nodes in a cycle")


def test_input_map_breaks_a_cycle():
    # TF: an input taken from input_map is not an edge of the imported graph.
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, name="x")
        af.import_graph_def(parse(identity("a", "b") + identity("b", "a")),
                            input_map={"b:0": x}, name="")
        assert graph.get_operation_by_name("a").inputs[0] is x


@pytest.mark.parametrize("name", ["", " ", "x:0", "^x", "a\x00b", "_x", "/x", "a b", "-x", "é",
                                  "a\\b", "a>", "a>_b", "a>>b", "x\n"])
def test_invalid_node_names_are_refused(name):
    # Was: imported. TF: ValueError "Node '...': Node name contains invalid characters".
    graph_def = parse(const("c"))
    graph_def.node[0].name = name
    refused(graph_def, f"Node '{name}': Node name contains invalid characters")


@pytest.mark.parametrize("name", ["x/", ".x", "x.y-z_w/v>u", "a/>b", "a>b", "0"])
def test_valid_node_names_import(name):
    graph_def = parse(const("c"))
    graph_def.node[0].name = name
    assert import_text(graph_def).get_operation_by_name(name).type == "Const"


def test_internal_names_only_on_the_session_path():
    # TF's importer refuses a leading underscore; its runtime graphs allow internal ops.
    graph_def = parse(const("c"))
    graph_def.node[0].name = "_x"
    refused(graph_def, "Node '_x': Node name contains invalid characters")
    convert_graph_def_to_graph(graph_def)
    graph_def.node[0].name = "x:0"
    with pytest.raises(errors.InvalidArgumentError, match="invalid characters"):
        convert_graph_def_to_graph(graph_def)


def test_control_inputs_before_data_inputs_are_refused():
    # Was: imported. TF: "Node 'i': Control dependencies must come after regular
    # dependencies".
    text = const("c") + const("d") + node("i", "Identity", ["^d", "c"], T="type: DT_FLOAT")
    fragment = "Node 'i': Control dependencies must come after regular dependencies"
    refused(text, fragment)
    refused_by_session_path(text, fragment)


@pytest.mark.parametrize("versions, fragment", [
    ("producer: -1", "GraphDef producer version -1 below min producer 0 supported by aioflow"),
    ("producer: 5 min_consumer: 100000", "GraphDef min consumer version 100000 above current "
                                         "version 1994 for aioflow"),
    ("producer: 5 bad_consumers: 1994", "GraphDef disallows consumer version 1994.  Please "
                                        "upgrade aioflow: this version is likely buggy."),
])
def test_graph_def_versions_this_runtime_may_not_read(versions, fragment):
    # Was: imported. TF: CheckVersions's words (with TensorFlow and its version).
    text = f"versions {{ {versions} }}\n" + const("c")
    refused(text, fragment)
    refused_by_session_path(text, fragment)


@pytest.mark.parametrize("versions", ["producer: 5 bad_consumers: 1993",
                                      "producer: 5 min_consumer: 10", ""])
def test_graph_def_versions_this_runtime_reads(versions):
    import_text(f"versions {{ {versions} }}\n" + const("c"))


def test_input_map_keys_naming_no_output_are_refused():
    # Was: an out-of-range output index was accepted. TF: ValueError listing them.
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32)
        with pytest.raises(ValueError) as info:
            af.import_graph_def(parse(const("c")), input_map={"c:7": x, "nothere:0": x},
                                name="")
    assert str(info.value) == ("Attempted to map inputs that were not found in graph_def: "
                               "[c:7, nothere:0]")


def test_input_map_keys_that_are_used_or_name_an_output_are_fine():
    # TF: a key is missing only when unused and naming no output of the GraphDef.
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, name="x")
        af.import_graph_def(parse(const("c") + identity("i", "ext:0")),
                            input_map={"c:0": x, "c": x, "ext:0": x}, name="")
        assert graph.get_operation_by_name("i").inputs[0] is x


@pytest.mark.parametrize("text", [
    const("c", dtype="DT_FLOAT_REF"),
    const("c").replace('key: "dtype" value { type: DT_FLOAT }',
                       'key: "dtype" value { type: DT_FLOAT_REF }'),
])
def test_ref_type_const_is_refused(text):
    # Was: imported. TF: "AttrValue must not have reference type value of float_ref".
    fragment = "AttrValue must not have reference type value of float_ref\n\t for attr 'dtype'"
    refused(text, fragment)
    refused_by_session_path(text, fragment)


@pytest.mark.parametrize("device, fragment", [
    ("/device:CPU:0/device:GPU:0", "Multiple device types are not allowed while parsing the "
                                   "device spec: /device:CPU:0/device:GPU:0."),
    ("/cpu:0/gpu:0", "Multiple device types are not allowed while parsing the device spec: "
                     "/cpu:0/gpu:0."),
    ("/cpu:0/cpu:0", "Multiple device types are not allowed"),
    ("/foo:bar", "Unknown attribute 'foo' is encountered while parsing the device spec: "
                 "'/foo:bar'."),
])
def test_device_strings_naming_several_device_types_are_refused(device, fragment):
    # Was: imported. TF: ValueError from DeviceSpec with these words.
    refused(const("c", device=device), fragment)
    refused_by_session_path(const("c", device=device), fragment)
    with pytest.raises(ValueError, match="while parsing the device spec"):
        device_spec.DeviceSpec.from_string(device)


def test_device_strings_with_one_device_type_import():
    graph = import_text(const("c", device="/job:localhost/replica:0/task:0/device:CPU:0"))
    assert graph.get_operation_by_name("c").device == \
        "/job:localhost/replica:0/task:0/device:CPU:0"
    assert device_spec.canonical("/cpu:1") == "/device:CPU:1"


@pytest.mark.parametrize("value, fragment", [
    (0, "Value for attr 'parallel_iterations' of 0 must be at least minimum 1"),
    (-1, "Value for attr 'parallel_iterations' of -1 must be at least minimum 1"),
    (2**40, f"Attr parallel_iterations has value {2**40} out of range for an int32"),
])
def test_enter_parallel_iterations_out_of_range_is_refused(value, fragment):
    # Was: imported. TF 2.21: imports 0 and -1 (-1 then kills the process with SIGFPE when
    # run) and fails 2**40 at run with this message; aioflow refuses all three at import.
    graph_def = while_loop_graph_def()
    enter = next(n for n in graph_def.node if n.op == "Enter")
    enter.attr["parallel_iterations"].i = value
    refused(graph_def, fragment)
    with pytest.raises(errors.InvalidArgumentError, match="parallel_iterations"):
        convert_graph_def_to_graph(graph_def)


async def test_a_while_loop_graph_def_still_imports_and_runs():
    graph = import_text(while_loop_graph_def(parallel_iterations=1))
    async with af.Session(graph=graph) as sess:
        assert await sess.run("while/Exit:0") == 3


# -- 4. output indices -----------------------------------------------------------------------

@pytest.mark.parametrize("digit", ["\u0661", "\u00b2", "\uff11", "\u0663"])
def test_non_ascii_digit_in_an_output_index_names_an_unknown_node(digit):
    # Was: "while/Merge:١" read as output 1 of Merge, rewiring the loop (which then hung).
    # TF: ValueError "Node '...': Unknown input node 'while/Merge:١'".
    graph_def = while_loop_graph_def()
    switch = next(n for n in graph_def.node if n.name == "while/Switch")
    switch.input[0] = f"while/Merge:{digit}"
    fragment = f"Node 'while/Switch': Unknown input node 'while/Merge:{digit}'"
    refused(graph_def, fragment)
    with pytest.raises(errors.InvalidArgumentError, match="Unknown input node"):
        convert_graph_def_to_graph(graph_def)


@pytest.mark.parametrize("text, fragment", [
    ("c:5", "Connecting to invalid output 5 of source node c which has 1 outputs."),
    ("c:01", "Connecting to invalid output 1 of source node c which has 1 outputs."),
    ("c:2147483648", "Connecting to invalid output 2147483648 of source node c"),
    ("c:99999999999999999999", "Unknown input node 'c:99999999999999999999'"),
    ("c:-1", "Unknown input node 'c:-1'"),
    ("c:", "Unknown input node 'c:'"),
    ("c:+0", "Unknown input node 'c:+0'"),
    ("c^c:0", "Unknown input node '^c:0'"),
])
def test_output_indices_out_of_range_or_malformed(text, fragment):
    # TF: the same words (it wraps indices past 2**32 and crashes on 2**31; aioflow reads
    # the number as written, and takes more than 10 significant digits as a node name).
    inputs = ["c", text[1:]] if text.startswith("c^") else [text]
    graph_text = const("c") + node("i", "Identity", inputs, T="type: DT_FLOAT")
    refused(graph_text, fragment)
    refused_by_session_path(graph_text, fragment)


@pytest.mark.parametrize("text, parsed", [
    ("x", ("x", 0)), ("x:2", ("x", 2)), ("^x", ("x", -1)), ("x:01", ("x", 1)),
    ("x:\u0661", ("x:\u0661", 0)), ("x:\u00b2", ("x:\u00b2", 0)), (":0", (":0", 0)),
    ("a:b:3", ("a:b", 3)),
])
def test_parse_input_takes_ascii_digits_only(text, parsed):
    assert node_def_util.parse_input(text) == parsed


def test_a_valid_graph_still_imports_and_keeps_its_values():
    graph = import_text(const("c", [2, 2], "float_val: 1 float_val: 2 float_val: 3")
                        + identity("i", "c"))
    value = graph.get_operation_by_name("c").get_attr("value")
    np.testing.assert_array_equal(value, [[1, 2], [3, 3]])
    assert graph.get_tensor_by_name("i:0").shape.as_list() == [2, 2]


# -- shape functions given constants of the wrong rank (fuzz: wrapped raw TypeErrors) -------

I32 = "type: DT_INT32"
F32 = "type: DT_FLOAT"
_VEC = 'int_val: 0 int_val: 0'


@pytest.mark.parametrize("text, fragment", [
    (placeholder("x", shape=[3]) + const("a", [1], "int_val: 0", "DT_INT32")
     + node("m", "ArgMax", ["x", "a"], T=F32, Tidx=I32, output_type="type: DT_INT64"),
     "Shape must be rank 0 but is rank 1 for 'm' (op: 'ArgMax')"),
    (placeholder("x", shape=[3]) + const("a", [1], "int_val: 0", "DT_INT32")
     + node("c", "ConcatV2", ["x", "x", "a"], T=F32, N="i: 2", Tidx=I32),
     "Shape must be rank 0 but is rank 1 for 'c' (op: 'ConcatV2')"),
    (placeholder("x", shape=[4]) + const("a", [2], _VEC, "DT_INT32")
     + node("s", "Split", ["a", "x"], T=F32, num_split="i: 2"),
     "Shape must be rank 0 but is rank 1 for 's' (op: 'Split')"),
    (placeholder("i", "DT_INT32", shape=[3]) + const("d", [2], _VEC, "DT_INT32")
     + const("on", values="float_val: 1") + const("off", values="float_val: 0")
     + node("o", "OneHot", ["i", "d", "on", "off"], T=F32, TI=I32, axis="i: -1"),
     "Shape must be rank 0 but is rank 1 for 'o' (op: 'OneHot')"),
    (const("s", [2], _VEC, "DT_INT32") + const("l", [], "int_val: 3", "DT_INT32")
     + const("d", [], "int_val: 1", "DT_INT32") + node("r", "Range", ["s", "l", "d"], Tidx=I32),
     "Shape must be rank 0 but is rank 1 for 'r' (op: 'Range')"),
    (placeholder("x", shape=[2, 3]) + const("m", [3], "int_val: 1", "DT_INT32")
     + node("t", "Tile", ["x", "m"], T=F32, Tmultiples=I32),
     "Shape must be rank 2 but is rank 3 for 't' (op: 'Tile')"),
    (placeholder("x", shape=[2]) + const("p", [1, 3], "int_val: 0", "DT_INT32")
     + node("p2", "Pad", ["x", "p"], T=F32, Tpaddings=I32),
     "Dimension must be 2 but is 3 for 'p2' (op: 'Pad')"),
    (placeholder("x", shape=[2]) + const("p", [2, 2], "int_val: 0", "DT_INT32")
     + node("p2", "Pad", ["x", "p"], T=F32, Tpaddings=I32),
     "Shape must be rank 2 but is rank 1 for 'p2' (op: 'Pad')"),
    (const("s", [2, 1], "int_val: 2", "DT_INT32") + const("v", values="float_val: 1")
     + node("f", "Fill", ["s", "v"], T=F32, index_type=I32),
     "Shape must be rank 1 but is rank 2"),
])
def test_shape_functions_refuse_constants_of_the_wrong_rank_in_tfs_words(text, fragment):
    message = refused(text, fragment)
    assert "only 0-dimensional" not in message and "zip()" not in message


@pytest.mark.parametrize("start, limit, delta, fragment", [
    ("0.0", "inf", "1.0", "Requires ((limit - start) / delta) <= 9223372036854775807"),
    ("0.0", "1e30", "1e-30", "Requires ((limit - start) / delta) <= 9223372036854775807"),
    ("nan", "1.0", "1.0", "Dimension -9223372036854775808 must be >= 0"),
])
def test_range_of_constants_too_long_or_nan_is_tfs_error(start, limit, delta, fragment):
    # TF 2.21's words (checked); was OverflowError from int(inf) in the shape function
    refused(const("s", values=f"float_val: {start}") + const("l", values=f"float_val: {limit}")
            + const("d", values=f"float_val: {delta}")
            + node("r", "Range", ["s", "l", "d"], Tidx="type: DT_FLOAT"), fragment)
