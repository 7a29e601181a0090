"""Function libraries and the functional ops: TF 2.21's graphs (tests/data/fn_*, made by
make_function_fixtures.py) run to TF's outputs, the library travels with the graph,
FunctionDef instantiation follows TF's rules, and bad input gets TF's error classes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from kernel_testutil import create
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors, op_def_registry
from aioflow.framework.function_instantiate import instantiate
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.framework.kernel_context import OpKernelContext
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import attr_value_pb2, config_pb2, function_pb2, graph_pb2, op_def_pb2
from aioflow.runtime.device import DeviceMgr
from aioflow.runtime.function_runtime import FunctionLibraryRuntime

DATA = Path(__file__).parent / "data"
MANIFEST = json.loads((DATA / "function_fixtures.json").read_text())


def fixture_graph_def(name: str) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString((DATA / f"fn_{name}.pb").read_bytes())
    return graph_def


async def run_fixture(name: str, config=None) -> None:
    """Import fixture `name`, run it as TF did, compare every fetch with TF's."""
    spec = MANIFEST[name]
    arrays = np.load(DATA / f"fn_{name}.npz")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(fixture_graph_def(name), name="")
    async with af.Session(graph=g, config=config) as sess:
        for target in spec["init"]:
            await sess.run(g.get_operation_by_name(target))
        feeds = {g.get_tensor_by_name(k): arrays[f"feed:{k}"] for k in spec["feeds"]}
        fetches = [g.get_tensor_by_name(f) for f in spec["fetches"]]
        for run in range(spec["runs"]):
            outs = await sess.run(fetches, feeds)
            for fetch, out in zip(spec["fetches"], outs, strict=True):
                want = arrays[f"fetch:{fetch}" + (f":{run}" if spec["runs"] > 1 else "")]
                assert out.dtype == want.dtype, (name, fetch)
                np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6,
                                           err_msg=f"{name} {fetch} run {run}")


def called_config() -> config_pb2.ConfigProto:
    """A session config that keeps every call a call (no inlining, no lowering)."""
    config = config_pb2.ConfigProto()
    config.experimental.executor_type = "SINGLE_THREADED_EXECUTOR"
    config.graph_options.optimizer_options.do_function_inlining = False
    config.graph_options.rewrite_options.function_optimization = \
        config.graph_options.rewrite_options.OFF
    return config


@pytest.fixture(params=["lowered", "called"])
def both_ways(request):
    """A session config per path: the default (lowered and inlined), or calls kept."""
    return None if request.param == "lowered" else called_config()


@pytest.mark.parametrize("name", sorted(MANIFEST))
async def test_fixture_runs_to_tensorflow_values_lowered(name):
    await run_fixture(name)


@pytest.mark.parametrize("name", sorted(MANIFEST))
async def test_fixture_runs_to_tensorflow_values_called(name):
    await run_fixture(name, called_config())


@pytest.mark.parametrize("name", sorted(MANIFEST))
async def test_fixture_runs_to_tensorflow_values_called_as_sub_steps(name, monkeypatch):
    """Segments off: no body is compiled, every call runs its body's executor."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "0")
    await run_fixture(name, called_config())


def test_fixtures_hold_the_functional_ops():
    ops = {op for spec in MANIFEST.values() for op in spec["ops"]}
    assert {"PartitionedCall", "StatefulPartitionedCall", "StatelessWhile", "StatelessIf",
            "StatelessCase"} <= ops | _body_ops()


def _body_ops() -> set:
    out = set()
    for name in MANIFEST:
        for fdef in fixture_graph_def(name).library.function:
            out.update(n.op for n in fdef.node_def)
    return out


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "function_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 13
    assert_equal_to_tf(tf_ops)


# -- the library travels --------------------------------------------------------------
def _functions(library) -> dict:
    return {f.signature.name: f for f in library.function}


def test_import_and_as_graph_def_keep_the_library():
    graph_def = fixture_graph_def("nested_calls")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="imported")
    out = g.as_graph_def()
    assert _functions(out.library) == _functions(graph_def.library)
    assert len(out.library.function) == 3
    # importing again adds nothing (same definitions); a different one is refused
    with g.as_default():
        af.import_graph_def(graph_def, name="again")
    assert len(g.as_graph_def().library.function) == 3
    clash = graph_pb2.GraphDef()
    clash.library.function.add().CopyFrom(graph_def.library.function[0])
    clash.library.function[0].node_def.add(name="extra", op="NoOp")
    with g.as_default(), pytest.raises(ValueError, match="a different function with the "
                                                         "same name already exists"):
        af.import_graph_def(clash)


def test_gradients_are_kept_not_used():
    library = fixture_graph_def("nested_calls").library
    library.gradient.add(function_name=library.function[0].signature.name,
                         gradient_func=library.function[1].signature.name)
    lib = FunctionLibraryDefinition(library)
    assert lib.find_gradient(library.function[0].signature.name) == \
        library.function[1].signature.name
    assert list(lib.to_proto().gradient) == list(library.gradient)


@pytest.mark.parametrize("lowered", [False, True])
async def test_session_graph_def_and_partitions_carry_the_library(run_with_partition_graphs,
                                                                  lowered):
    graph_def = fixture_graph_def("nested_calls")
    unused = graph_def.library.function.add()
    text_format.Parse('signature { name: "unused_fn" output_arg { name: "o" type: DT_FLOAT } '
                      '} node_def { name: "c" op: "Const" attr { key: "dtype" value { type: '
                      'DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT '
                      'tensor_shape {} float_val: 1 } } } } ret { key: "o" value: '
                      '"c:output:0" }', unused)
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    async with af.Session(graph=g, config=None if lowered else called_config()) as sess:
        feed = {"x:0": np.ones(3, np.float32), "y:0": np.ones(2, np.float32)}
        _, parts = await run_with_partition_graphs(sess, "out1:0", feed)
        assert set(_functions(sess._direct.graph_def.library)) == set(
            _functions(graph_def.library))
    (part,) = parts.values()
    # the partition carries what it calls, transitively: not the unused function; inlined,
    # only the _noinline function (still called) and what it calls
    used = {f.signature.name for f in graph_def.library.function} - {"unused_fn"}
    if lowered:
        used = {n for n in used if "inner_noinline" in n or "leaf" in n}
        assert not any(n.op == "PartitionedCall" and "outer" in n.attr["f"].func.name
                       for n in part.node)
    assert set(_functions(part.library)) == used


async def test_direct_session_extend_with_a_conflicting_library_fails():
    graph_def = fixture_graph_def("nested_calls")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    async with af.Session(graph=g) as sess:
        await sess.run("out1:0", {"x:0": np.ones(3, np.float32),
                                  "y:0": np.ones(2, np.float32)})
        clash = graph_pb2.GraphDef()
        clash.library.function.add().CopyFrom(graph_def.library.function[0])
        clash.library.function[0].signature.description = "changed"
        clash.node.add(name="other", op="NoOp")
        with pytest.raises(errors.InvalidArgumentError, match="different function"):
            sess._direct.extend(clash)


# -- instantiation --------------------------------------------------------------------
POLY = """
signature {
  name: "poly_sum"
  input_arg { name: "xs" type_attr: "T" number_attr: "N" }
  output_arg { name: "sum" type_attr: "T" }
  output_arg { name: "parts" type_attr: "T" number_attr: "N" }
  attr { name: "T" type: "type" }
  attr { name: "N" type: "int" has_minimum: true minimum: 1 }
}
node_def { name: "add" op: "AddN" input: "xs"
  attr { key: "T" value { placeholder: "T" } } attr { key: "N" value { placeholder: "N" } } }
node_def { name: "ident" op: "IdentityN" input: "xs" input: "^add"
  attr { key: "T" value { placeholder: "Tlist" } } }
node_def { name: "twice" op: "AddV2" input: "add:sum:0" input: "ident:output:0"
  attr { key: "T" value { placeholder: "T" } } }
ret { key: "sum" value: "twice:z:0" }
ret { key: "parts" value: "ident:output" }
"""


def _poly_library() -> FunctionLibraryDefinition:
    fdef = text_format.Parse(POLY, function_pb2.FunctionDef())
    return FunctionLibraryDefinition(function_pb2.FunctionDefLibrary(function=[fdef]))


def _attrs(dtype: int, n: int) -> dict:
    tlist = attr_value_pb2.AttrValue()
    tlist.list.type.extend([dtype] * n)
    return {"T": attr_value_pb2.AttrValue(type=dtype), "N": attr_value_pb2.AttrValue(i=n),
            "Tlist": tlist}


def test_instantiation_substitutes_placeholders_and_rewrites_outputs():
    inst = instantiate(_poly_library(), "poly_sum", _attrs(af.float32.as_datatype_enum, 3))
    nodes = {n.name: n for n in inst.graph_def.node}
    assert [n for n in nodes if nodes[n].op == "_Arg"] == ["xs_0", "xs_1", "xs_2"]
    assert [nodes[f"xs_{i}"].attr["index"].i for i in range(3)] == [0, 1, 2]
    assert list(nodes["add"].input) == ["xs_0", "xs_1", "xs_2"]
    assert nodes["add"].attr["T"].type == af.float32.as_datatype_enum
    assert nodes["add"].attr["N"].i == 3
    assert list(nodes["ident"].input) == ["xs_0", "xs_1", "xs_2", "^add"]
    assert list(nodes["twice"].input) == ["add", "ident"]
    assert list(nodes["sum_RetVal"].input) == ["twice"]
    assert [list(nodes[f"parts_{i}_RetVal"].input) for i in range(3)] == \
        [["ident"], ["ident:1"], ["ident:2"]]
    assert inst.arg_types == [af.float32.as_datatype_enum] * 3
    assert inst.ret_types == [af.float32.as_datatype_enum] * 4


def test_instantiation_errors_name_the_function():
    lib = _poly_library()
    with pytest.raises(errors.NotFoundError, match="Function nope is not defined"):
        instantiate(lib, "nope")
    with pytest.raises(errors.InvalidArgumentError, match="poly_sum"):
        instantiate(lib, "poly_sum", {"T": attr_value_pb2.AttrValue(type=1)})


async def test_function_runtime_called_from_python():
    """The interface a SavedModel loader uses: instantiate, then await run."""
    mgr = DeviceMgr.from_config(config_pb2.ConfigProto())
    flr = FunctionLibraryRuntime(_poly_library(), mgr.default_device, mgr)
    body = flr.instantiate("poly_sum", _attrs(af.int32.as_datatype_enum, 2))
    assert flr.instantiate("poly_sum", _attrs(af.int32.as_datatype_enum, 2)) is body
    outs = await flr.run(body, None, [np.array([1, 2], np.int32), np.array([10, 20], np.int32)])
    np.testing.assert_array_equal(outs[0], [12, 24])
    np.testing.assert_array_equal(outs[1], [1, 2])
    np.testing.assert_array_equal(outs[2], [10, 20])
    mgr.shutdown()


def _call(graph, fname, inputs, tout, op="PartitionedCall", attrs=None, name=None):
    func = attr_value_pb2.NameAttrList(name=fname)
    for key, value in (attrs or {}).items():
        func.attr[key].CopyFrom(value)
    return apply_op(op, name=name, args=inputs, Tout=tout, f=func)


async def test_polymorphic_call_in_a_session(both_ways):
    g = af.Graph()
    g._library.add_library(_poly_library())
    with g.as_default():
        a = af.placeholder(af.float32, [2], name="a")
        b = af.placeholder(af.float32, [2], name="b")
        outs = _call(g, "poly_sum", [a, b], [af.float32] * 3,
                     attrs=_attrs(af.float32.as_datatype_enum, 2), name="call")
    async with af.Session(graph=g, config=both_ways) as sess:
        got = await sess.run(outs, {a: np.array([1.0, 2.0], np.float32),
                                    b: np.array([0.5, 0.25], np.float32)})
    np.testing.assert_allclose(got[0], [2.5, 4.25])  # (a + b) + a
    np.testing.assert_allclose(got[2], [0.5, 0.25])


# -- errors ---------------------------------------------------------------------------
async def test_missing_function_is_not_found_naming_the_call(both_ways):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        out = _call(g, "no_such_fn", [x], [af.float32], name="caller")
    async with af.Session(graph=g, config=both_ways) as sess:
        with pytest.raises(errors.NotFoundError, match="Function no_such_fn is not defined"
                                                       r".*caller"):
            await asyncio.wait_for(sess.run(out, {x: 1.0}), 30)


async def test_call_with_a_wrong_dtype_is_invalid_argument(both_ways):
    g = af.Graph()
    g._library.add_library(_poly_library())
    with g.as_default():
        x = af.placeholder(af.int32, [], name="x")
        out = _call(g, "poly_sum", [x], [af.float32, af.float32],
                    attrs=_attrs(af.float32.as_datatype_enum, 1), name="bad_call")
    async with af.Session(graph=g, config=both_ways) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Expects arg\[0\] of function 'poly_sum' to be float but "
                                 r"int32 is provided: node bad_call"):
            await asyncio.wait_for(sess.run(out, {x: 1}), 30)


async def test_call_with_a_wrong_arity_is_invalid_argument(both_ways):
    g = af.Graph()
    g._library.add_library(_poly_library())
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        out = _call(g, "poly_sum", [x, x], [af.float32, af.float32],
                    attrs=_attrs(af.float32.as_datatype_enum, 1), name="bad_arity")
    async with af.Session(graph=g, config=both_ways) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="Function 'poly_sum' expects 1 arguments but 2 are given: "
                                 "node bad_arity"):
            await asyncio.wait_for(sess.run(out, {x: 1.0}), 30)


RESHAPE_FN = """
signature { name: "bad_reshape" input_arg { name: "x" type: DT_FLOAT }
            output_arg { name: "y" type: DT_FLOAT } }
node_def { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } }
  int_val: 5 } } } }
node_def { name: "inner_reshape" op: "Reshape" input: "x" input: "shape:output:0"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tshape" value { type: DT_INT32 } } }
ret { key: "y" value: "inner_reshape:output:0" }
"""


async def test_error_inside_a_body_names_the_node_and_the_function():
    g = af.Graph()
    g._library.add_function_def(text_format.Parse(RESHAPE_FN, function_pb2.FunctionDef()))
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        out = _call(g, "bad_reshape", [x], [af.float32], name="outer_call")
    for config in (called_config(), None):
        async with af.Session(graph=g, config=config) as sess:
            np.testing.assert_allclose(await sess.run(out, {x: np.ones(5, np.float32)}),
                                       [np.ones(5)])
            with pytest.raises(errors.InvalidArgumentError) as info:
                await sess.run(out, {x: np.ones(3, np.float32)})
        message = info.value.message
        assert "inner_reshape" in message and "outer_call" in message
        if config is not None:  # called: the function is named; inlined: the node is
            assert "{{function_node bad_reshape}}" in message  # outer_call/inner_reshape


INFINITE_WHILE = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "loop" op: "While" input: "x"
  attr { key: "T" value { list { type: DT_FLOAT } } }
  attr { key: "cond" value { func { name: "always" } } }
  attr { key: "body" value { func { name: "inc" } } } }
library {
  function { signature { name: "always" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "c" type: DT_BOOL } }
    node_def { name: "t" op: "Const" attr { key: "dtype" value { type: DT_BOOL } }
      attr { key: "value" value { tensor { dtype: DT_BOOL tensor_shape {} bool_val: true } } } }
    ret { key: "c" value: "t:output:0" } }
  function { signature { name: "inc" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "w" type: DT_FLOAT } }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
    node_def { name: "add" op: "AddV2" input: "v" input: "one:output:0"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "w" value: "add:z:0" } }
}
"""


async def test_endless_while_meets_its_deadline_and_the_loop_stays_live():
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(INFINITE_WHILE, graph_pb2.GraphDef()), name="")
    ticks = 0

    async def heartbeat():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.create_task(heartbeat())
    try:
        async with af.Session(graph=g, config=called_config()) as sess:
            options = config_pb2.RunOptions(timeout_in_ms=300)
            with pytest.raises(errors.DeadlineExceededError):
                await asyncio.wait_for(sess.run("loop:0", {"x:0": 0.0}, options=options), 30)
    finally:
        beat.cancel()
    assert ticks >= 5  # the loop ran other coroutines while the While iterated


async def test_cancelling_the_run_stops_a_while():
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(INFINITE_WHILE, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=called_config()) as sess:
        task = asyncio.ensure_future(sess.run("loop:0", {"x:0": 0.0}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)


async def test_traced_run_shows_the_body_nodes():
    g = af.Graph()
    g._library.add_function_def(text_format.Parse(RESHAPE_FN, function_pb2.FunctionDef()))
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        out = _call(g, "bad_reshape", [x], [af.float32], name="outer_call")
    async with af.Session(graph=g, config=called_config()) as sess:
        options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
        metadata = config_pb2.RunMetadata()
        await sess.run(out, {x: np.ones(5, np.float32)}, options=options,
                       run_metadata=metadata)
    names = {n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats}
    assert {"outer_call", "inner_reshape"} <= names
    labels = {n.timeline_label for d in metadata.step_stats.dev_stats for n in d.node_stats}
    assert any(label.startswith("inner_reshape = Reshape(") for label in labels)


async def test_call_inside_a_v1_while_gets_each_iterations_inputs(both_ways):
    g = af.Graph()
    g._library.add_library(_poly_library())
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")

        def body(i, acc):
            (doubled, _, _) = _call(g, "poly_sum", [acc, af.cast(i, af.float32)],
                                    [af.float32] * 3,
                                    attrs=_attrs(af.float32.as_datatype_enum, 2))
            return i + 1, af.reshape(doubled, [])

        _, acc = af.while_loop(lambda i, acc: i < n, body,
                               [af.constant(0), af.constant(1.0)])
    async with af.Session(graph=g, config=both_ways) as sess:
        got = await sess.run(acc, {n: 4})
    want = 1.0
    for i in range(4):
        want = (want + i) + want  # poly_sum's sum: (xs[0] + xs[1]) + xs[0]
    assert got == pytest.approx(want)


def test_functional_ops_are_registered():
    for name in ("PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "While",
                 "StatelessWhile", "Case", "StatelessCase", "_DeviceArg", "_DeviceRetval",
                 "DisableCopyOnRead"):
        assert op_def_registry.get(name) is not None


@pytest.mark.parametrize("name, functional, lowered_ops", [
    ("while_counter", "StatelessWhile", {"Enter", "Exit", "NextIteration", "LoopCond"}),
    ("if_in_while", "StatelessWhile", {"Enter", "Switch", "Merge", "LoopCond"}),
    ("while_in_if", "StatelessIf", {"Switch", "Merge", "Enter", "Exit"}),
    ("case_1", "StatelessCase", {"_SwitchN", "Merge"}),
])
async def test_lowering_makes_v1_control_flow(run_with_partition_graphs, name, functional,
                                              lowered_ops):
    spec = MANIFEST[name]
    arrays = np.load(DATA / f"fn_{name}.npz")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(fixture_graph_def(name), name="")
    feed = {k: arrays[f"feed:{k}"] for k in spec["feeds"]}
    for config, want in ((None, lowered_ops), (called_config(), {functional})):
        async with af.Session(graph=g, config=config) as sess:
            _, parts = await run_with_partition_graphs(sess, spec["fetches"][0], feed)
        (part,) = parts.values()
        ops = {n.op for n in part.node}
        assert want <= ops, (config, ops)
        if config is None:
            assert not ops & {"StatelessWhile", "StatelessIf", "StatelessCase",
                              "PartitionedCall"}, ops


async def test_noinline_function_stays_a_call(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(fixture_graph_def("nested_calls"), name="")
    async with af.Session(graph=g) as sess:
        _, parts = await run_with_partition_graphs(
            sess, "out1:0", {"x:0": np.ones(3, np.float32), "y:0": np.ones(2, np.float32)})
    (part,) = parts.values()
    calls = [n.attr["f"].func.name for n in part.node if n.op == "PartitionedCall"]
    assert len(calls) == 1 and "inner_noinline" in calls[0]


GROWING_WHILE = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "loop" op: "While" input: "x"
  attr { key: "T" value { list { type: DT_FLOAT } } }
  attr { key: "output_shapes" value { list { shape { dim { size: 1 } } } } }
  attr { key: "cond" value { func { name: "small" } } }
  attr { key: "body" value { func { name: "grow" } } } }
library {
  function { signature { name: "small" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "c" type: DT_BOOL } }
    node_def { name: "size" op: "Size" input: "v"
      attr { key: "T" value { type: DT_FLOAT } } attr { key: "out_type" value { type: DT_INT32 } } }
    node_def { name: "four" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 4 } } } }
    node_def { name: "less" op: "Less" input: "size:output:0" input: "four:output:0"
      attr { key: "T" value { type: DT_INT32 } } }
    ret { key: "c" value: "less:z:0" } }
  function { signature { name: "grow" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "w" type: DT_FLOAT } }
    node_def { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
    node_def { name: "cat" op: "ConcatV2" input: "v" input: "v" input: "axis:output:0"
      attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } }
      attr { key: "Tidx" value { type: DT_INT32 } } }
    ret { key: "w" value: "cat:output:0" } }
}
"""


async def test_while_shape_invariant_is_enforced_when_called():
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(GROWING_WHILE, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=called_config()) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"Loop variable 0 of loop: the "
                                                              r"body returned shape \[2\]"):
            await asyncio.wait_for(sess.run("loop:0", {"x:0": np.ones(1, np.float32)}), 30)


async def test_long_called_while_matches_numpy(both_ways):
    graph_def = fixture_graph_def("while_counter")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    acc = np.float32(1.0)
    for _ in range(3000):
        acc = acc + np.float32(0.5) * acc / (acc + np.float32(1.0))
    async with af.Session(graph=g, config=both_ways) as sess:
        got = await sess.run("out:0", {"n:0": np.int32(3000)})
    np.testing.assert_allclose(got, acc, rtol=1e-5)


DANGLING = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "outer" op: "StatefulPartitionedCall" input: "x"
  attr { key: "Tin" value { list { type: DT_FLOAT } } }
  attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "f" value { func { name: "calls_missing" } } } }
library {
  function { signature { name: "calls_missing" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "w" type: DT_FLOAT } }
    node_def { name: "inner" op: "PartitionedCall" input: "v"
      attr { key: "Tin" value { list { type: DT_FLOAT } } }
      attr { key: "Tout" value { list { type: DT_FLOAT } } }
      attr { key: "f" value { func { name: "not_in_the_library" } } } }
    ret { key: "w" value: "inner:output:0" } }
}
"""


async def test_library_referencing_a_missing_function_is_not_found(both_ways):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(DANGLING, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        with pytest.raises(errors.NotFoundError,
                           match="Function not_in_the_library is not defined"):
            await asyncio.wait_for(sess.run("outer:0", {"x:0": 1.0}), 30)


@pytest.mark.parametrize("lowered", [False, True])
async def test_two_devices_each_partition_carries_what_it_calls(run_with_partition_graphs,
                                                                lowered):
    config = config_pb2.ConfigProto(device_count={"CPU": 2})
    if not lowered:
        config.MergeFrom(called_config())
    g = af.Graph()
    g._library.add_library(_poly_library())
    with g.as_default():
        a = af.placeholder(af.float32, [2], name="a")
        with af.device("/cpu:1"):
            outs = _call(g, "poly_sum", [a, a * 2.0], [af.float32] * 3,
                         attrs=_attrs(af.float32.as_datatype_enum, 2), name="call")
        total = af.identity(outs[0], name="total")
    async with af.Session(graph=g, config=config) as sess:
        got, parts = await run_with_partition_graphs(sess, total, {a: np.ones(2, np.float32)})
    np.testing.assert_allclose(got, [4.0, 4.0])  # (a + 2a) + a
    assert len(parts) == 2
    libraries = {device[-5:]: {f.signature.name for f in part.library.function}
                 for device, part in parts.items()}
    assert libraries == {"CPU:0": set(), "CPU:1": set() if lowered else {"poly_sum"}}


INT_IF = """
node { name: "p" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "branch" op: "If" input: "p" input: "x"
  attr { key: "Tcond" value { type: DT_INT32 } }
  attr { key: "Tin" value { list { type: DT_FLOAT } } }
  attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "_lower_using_switch_merge" value { b: true } }
  attr { key: "then_branch" value { func { name: "neg" } } }
  attr { key: "else_branch" value { func { name: "same" } } } }
library {
  function { signature { name: "neg" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "w" type: DT_FLOAT } }
    node_def { name: "n" op: "Neg" input: "v" attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "w" value: "n:y:0" } }
  function { signature { name: "same" input_arg { name: "v" type: DT_FLOAT }
                         output_arg { name: "w" type: DT_FLOAT } }
    ret { key: "w" value: "v" } }
}
"""


@pytest.mark.parametrize("pred, want", [(0, 2.0), (3, -2.0), (-1, -2.0)])
async def test_if_with_an_int_predicate_is_tfs_to_bool(both_ways, pred, want):
    """Tcond int32: not lowered (Switch takes a bool), called with TF's ToBool."""
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(INT_IF, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        got = await sess.run("branch:0", {"p:0": np.int32(pred), "x:0": np.float32(2.0)})
    assert got == want


NO_ARGS = """
signature { name: "seven" output_arg { name: "o" type: DT_FLOAT } }
node_def { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 7 } } } }
node_def { name: "ident" op: "Identity" input: "c:output:0"
  attr { key: "T" value { type: DT_FLOAT } } }
ret { key: "o" value: "ident:output:0" }
"""


async def test_function_without_arguments(both_ways):
    g = af.Graph()
    g._library.add_function_def(text_format.Parse(NO_ARGS, function_pb2.FunctionDef()))
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        with af.control_dependencies([x]):
            (seven,) = _call(g, "seven", [], [af.float32], name="seven_call")
        out = seven * x
    async with af.Session(graph=g, config=both_ways) as sess:
        assert await sess.run(out, {x: 3.0}) == 21.0


async def test_ensure_shape_in_a_body_fails_with_tfs_message(both_ways):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(fixture_graph_def("ensure_shape"), name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Shape of tensor (PartitionedCall/)?v \[3,4\] is not "
                                 r"compatible with expected shape \[2,\?\]\."):  # inlined: v
            await sess.run("out:0", {"x:0": np.zeros((3, 4), np.float32)})


async def test_concurrent_runs_of_called_loops_do_not_mix(monkeypatch):
    """Twenty runs in flight on one loop, each its own n: the While kernel, its bodies and
    their executors are shared; every run gets its own result (compiled and sub-steps)."""
    graph_def = fixture_graph_def("if_in_while")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")

    def collatz(n):
        i, steps = 0, 0
        while i < 50 and n > 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            i, steps = i + 1, steps + (n == 1)
        return i, n, steps

    for segments in ("1", "0"):
        monkeypatch.setenv("AIOFLOW_SEGMENTS", segments)
        async with af.Session(graph=g, config=called_config()) as sess:
            ns = list(range(2, 22))
            outs = await asyncio.gather(*(sess.run(["out0:0", "out1:0", "out2:0"],
                                                   {"n:0": np.int32(n)}) for n in ns))
        for n, out in zip(ns, outs, strict=True):
            assert tuple(int(v) for v in out) == collatz(n), n


SIDE_EFFECT = """
node { name: "v" op: "VarHandleOp" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape {} } } attr { key: "shared_name" value { s: "v" } } }
node { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }
node { name: "init" op: "AssignVariableOp" input: "v" input: "zero"
  attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "call" op: "StatefulPartitionedCall" input: "x" input: "v"
  attr { key: "Tin" value { list { type: DT_FLOAT type: DT_RESOURCE } } }
  attr { key: "Tout" value { list { type: DT_FLOAT } } }
  attr { key: "f" value { func { name: "bump" } } } }
node { name: "read" op: "ReadVariableOp" input: "v" input: "^call"
  attr { key: "dtype" value { type: DT_FLOAT } } }
library {
  function {
    signature { name: "bump" input_arg { name: "x" type: DT_FLOAT }
                input_arg { name: "h" type: DT_RESOURCE }
                output_arg { name: "y" type: DT_FLOAT } control_output: "upd"
                is_stateful: true }
    node_def { name: "add" op: "AssignAddVariableOp" input: "h" input: "x"
      attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "twice" op: "AddV2" input: "x" input: "x"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "y" value: "twice:z:0" }
    control_ret { key: "upd" value: "add" }
    arg_attr { key: 0 value { attr { key: "_user_specified_name" value { s: "x" } } } }
    resource_arg_unique_id { key: 1 value: 0 }
  }
}
"""


async def test_control_output_runs_although_no_result_needs_it(both_ways):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(SIDE_EFFECT, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        await sess.run(g.get_operation_by_name("init"))
        assert await sess.run("call:0", {"x:0": 1.5}) == 3.0
        assert await sess.run("read:0", {"x:0": 2.0}) == 3.5  # 1.5, then 2.0 (^call)


def test_instantiation_carries_arg_attrs_resource_ids_and_input_shapes():
    graph_def = text_format.Parse(SIDE_EFFECT, graph_pb2.GraphDef())
    lib = FunctionLibraryDefinition(graph_def.library)
    shapes = attr_value_pb2.AttrValue()
    shapes.list.shape.add()  # x: a scalar
    shapes.list.shape.add(unknown_rank=True)
    inst = instantiate(lib, "bump", {"_input_shapes": shapes})
    nodes = {n.name: n for n in inst.graph_def.node}
    assert nodes["x"].attr["_user_specified_name"].s == b"x"
    assert nodes["h"].attr["_resource_arg_unique_id"].i == 0
    assert list(nodes["x"].attr["_output_shapes"].list.shape) == [shapes.list.shape[0]]
    assert inst.control_ret == ["add"] and inst.stateful


def test_device_arg_and_retval_use_the_call_frame():
    frame = OpKernelContext(1, [np.float32(4.0), np.int32(2)], 1)
    arg = create("_DeviceArg", [], T=af.int32, index=1)
    retval = create("_DeviceRetval", [np.int32(2)], index=0)
    (value,) = arg.compute(frame, [])
    retval.compute(frame, [value])
    assert frame.retvals == [2]
    with pytest.raises(errors.InvalidArgumentError, match=r"GetArg 2 is not within \[0, 2\)"):
        create("_DeviceArg", [], T=af.int32, index=2).compute(frame, [])


def test_switch_n_routes_to_one_output_and_the_last_when_out_of_range():
    kernel = create("_SwitchN", [np.float32(1.5), np.int32(1)], num_outs=3)
    assert kernel.compute(None, [np.float32(1.5), np.int32(1)]) == [None, 1.5, None]
    assert kernel.compute(None, [np.float32(1.5), np.int32(9)]) == [None, None, 1.5]
    assert kernel.compute(None, [np.float32(1.5), np.int32(-1)]) == [None, None, 1.5]


SCALE_LOOP = """
node { name: "n" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "acc" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "loop" op: "StatelessWhile" input: "zero" input: "acc" input: "n"
  attr { key: "T" value { list { type: DT_INT32 type: DT_FLOAT type: DT_INT32 } } }
  attr { key: "parallel_iterations" value { i: 1 } }
  attr { key: "cond" value { func { name: "below" } } }
  attr { key: "body" value { func { name: "scale" } } } }
library {
  function { signature { name: "below" input_arg { name: "i" type: DT_INT32 }
      input_arg { name: "a" type: DT_FLOAT } input_arg { name: "k" type: DT_INT32 }
      output_arg { name: "c" type: DT_BOOL } }
    node_def { name: "less" op: "Less" input: "i" input: "k"
      attr { key: "T" value { type: DT_INT32 } } }
    ret { key: "c" value: "less:z:0" } }
  function { signature { name: "scale" input_arg { name: "i" type: DT_INT32 }
      input_arg { name: "a" type: DT_FLOAT } input_arg { name: "k" type: DT_INT32 }
      output_arg { name: "i2" type: DT_INT32 } output_arg { name: "a2" type: DT_FLOAT }
      output_arg { name: "k2" type: DT_INT32 } }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }
    node_def { name: "next" op: "AddV2" input: "i" input: "one:output:0"
      attr { key: "T" value { type: DT_INT32 } } }
    node_def { name: "f" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1.5 } } } }
    node_def { name: "mul" op: "Mul" input: "a" input: "f:output:0"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "i2" value: "next:z:0" } ret { key: "a2" value: "mul:z:0" }
    ret { key: "k2" value: "k" } }
}
"""


@pytest.mark.parametrize("size", [3, 70000])
async def test_called_while_compiled_or_falling_back_to_sub_steps(size):
    """Small values: the loop runs as one generated function; a large one (over the
    inline threshold) falls back to sub-steps from where it stopped: same values."""
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(SCALE_LOOP, graph_pb2.GraphDef()), name="")
    acc = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    want = acc.copy()
    for _ in range(7):
        want = want * np.float32(1.5)
    async with af.Session(graph=g, config=called_config()) as sess:
        i, got, _ = await sess.run(["loop:0", "loop:1", "loop:2"],
                                   {"n:0": np.int32(7), "acc:0": acc})
    assert i == 7
    np.testing.assert_array_equal(got, want)


async def test_lowered_while_gives_resource_loop_variables_a_constant_enter(
        run_with_partition_graphs):
    """As TF's LowerWhileHelper (its partition graph, grappler off, in the manifest):
    a resource loop variable gets a constant Enter and no Merge, Switch, Exit or
    NextIteration; the others their v1 loop as before."""
    tf_lowered = MANIFEST["resource_while"]["tf_lowered"]
    arrays = np.load(DATA / "fn_resource_while.npz")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(fixture_graph_def("resource_while"), name="")
    async with af.Session(graph=g) as sess:
        await sess.run(g.get_operation_by_name("init"))
        out, parts = await run_with_partition_graphs(
            sess, "out:0", {k: arrays[f"feed:{k}"] for k in ("x:0", "n:0")})
    np.testing.assert_allclose(out, arrays["fetch:out:0:0"], rtol=1e-6)
    (part,) = parts.values()

    def type_name(t):
        return af.as_dtype(t).name

    enters = sorted([type_name(n.attr["T"].type), n.attr["is_constant"].b]
                    for n in part.node if n.op == "Enter")
    assert [e for e in enters if e[1]] == [e for e in tf_lowered["enters"] if e[1]] \
        == [["resource", True]] * 2
    assert {t for t, c in enters if not c} == {t for t, c in tf_lowered["enters"] if not c}
    for op in ("Merge", "Switch", "NextIteration", "Exit"):
        ours = {type_name(n.attr["T"].type) for n in part.node if n.op == op}
        assert "resource" not in ours and "resource" not in tf_lowered[op], op
        assert set(tf_lowered[op]) <= ours, op


RESOURCE_LOOP = """
node { name: "v" op: "VarHandleOp" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape {} } } attr { key: "shared_name" value { s: "v" } } }
node { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0 } } } }
node { name: "i0" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "init" op: "AssignVariableOp" input: "v" input: "zero"
  attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "loop" op: "While" %(inputs)s
  attr { key: "T" value { list { %(types)s } } }
  attr { key: "output_shapes" value { list { %(shapes)s } } }
  attr { key: "parallel_iterations" value { i: 10 } }
  attr { key: "_lower_using_switch_merge" value { b: true } }
  attr { key: "cond" value { func { name: "below" } } }
  attr { key: "body" value { func { name: "bump" } } } }
node { name: "out" op: "ReadVariableOp" input: "v" input: "^loop"
  attr { key: "dtype" value { type: DT_FLOAT } } }
library {
  function { signature { name: "below" %(args)s output_arg { name: "c" type: DT_BOOL }
                         is_stateful: true }
    node_def { name: "read" op: "ReadVariableOp" input: "h"
      attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "limit" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 5 } } } }
    node_def { name: "less" op: "Less" input: "read:value:0" input: "limit:output:0"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "c" value: "less:z:0" } }
  function { signature { name: "bump" %(args)s %(outs)s is_stateful: true
                         control_output: "add" }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
      attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }
    node_def { name: "add" op: "AssignAddVariableOp" input: "h" input: "one:output:0"
      attr { key: "dtype" value { type: DT_FLOAT } } }
    %(body)s
    control_ret { key: "add" value: "add" } }
}
"""


@pytest.mark.parametrize("with_counter", [False, True])
async def test_while_updating_a_resource_loop_variable_orders_its_iterations(both_ways,
                                                                             with_counter):
    """The body's only effect is a variable update (a control output), the cond reads
    the variable through a resource loop variable: each iteration's read follows the
    previous update (parallel_iterations 10), and the loop stops when TF's does: the
    body's nodes (gated by the first argument, here the resource) do not run on the
    exit iteration. With only the resource as loop variable it is lowered as any other
    (no constant Enter)."""
    if with_counter:
        parts = {
            "inputs": 'input: "v" input: "i0"', "types": "type: DT_RESOURCE type: DT_INT32",
            "shapes": "shape {} shape {}",
            "args": 'input_arg { name: "h" type: DT_RESOURCE } '
                    'input_arg { name: "i" type: DT_INT32 }',
            "outs": 'output_arg { name: "o" type: DT_RESOURCE } '
                    'output_arg { name: "j" type: DT_INT32 }',
            "body": 'node_def { name: "inc" op: "AddV2" input: "i" input: "k:output:0" '
                    'attr { key: "T" value { type: DT_INT32 } } } '
                    'node_def { name: "k" op: "Const" attr { key: "dtype" value '
                    '{ type: DT_INT32 } } attr { key: "value" value { tensor { dtype: '
                    'DT_INT32 tensor_shape {} int_val: 1 } } } } '
                    'ret { key: "j" value: "inc:z:0" } ret { key: "o" value: "h" }'}
    else:
        parts = {"inputs": 'input: "v"', "types": "type: DT_RESOURCE", "shapes": "shape {}",
                 "args": 'input_arg { name: "h" type: DT_RESOURCE }',
                 "outs": 'output_arg { name: "o" type: DT_RESOURCE }',
                 "body": 'ret { key: "o" value: "h" }'}
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(RESOURCE_LOOP % parts, graph_pb2.GraphDef()),
                            name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        for _ in range(2):
            await sess.run(g.get_operation_by_name("init"))
            fetches = ["out:0", "loop:1"] if with_counter else ["out:0"]
            got = await asyncio.wait_for(sess.run(fetches), 10)
            assert [int(v) for v in got] == [5, 5][:len(fetches)]


READING_LOOP = """
node { name: "v" op: "VarHandleOp" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 2 } } } }
  attr { key: "shared_name" value { s: "w" } } }
node { name: "w0" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "init" op: "AssignVariableOp" input: "v" input: "w0"
  attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "n" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }
node { name: "i0" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "acc0" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
                                       float_val: 1 } } } }
node { name: "loop" op: "While" input: "i0" input: "acc0" input: "v" input: "n"
  attr { key: "T" value { list { type: DT_INT32 type: DT_FLOAT type: DT_RESOURCE
                                 type: DT_INT32 } } }
  attr { key: "output_shapes" value { list { shape {} shape { dim { size: 2 } } shape {}
                                             shape {} } } }
  attr { key: "parallel_iterations" value { i: 10 } }
  attr { key: "_lower_using_switch_merge" value { b: true } }
  attr { key: "cond" value { func { name: "more" } } }
  attr { key: "body" value { func { name: "step" } } } }
library {
  function { signature { name: "more" input_arg { name: "i" type: DT_INT32 }
      input_arg { name: "acc" type: DT_FLOAT } input_arg { name: "h" type: DT_RESOURCE }
      input_arg { name: "n" type: DT_INT32 } output_arg { name: "c" type: DT_BOOL } }
    node_def { name: "less" op: "Less" input: "i" input: "n"
      attr { key: "T" value { type: DT_INT32 } } }
    ret { key: "c" value: "less:z:0" } }
  function { signature { name: "step" input_arg { name: "i" type: DT_INT32 }
      input_arg { name: "acc" type: DT_FLOAT } input_arg { name: "h" type: DT_RESOURCE }
      input_arg { name: "n" type: DT_INT32 }
      output_arg { name: "i1" type: DT_INT32 } output_arg { name: "acc1" type: DT_FLOAT }
      output_arg { name: "h1" type: DT_RESOURCE } output_arg { name: "n1" type: DT_INT32 }
      is_stateful: true }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
      attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }
    node_def { name: "inc" op: "AddV2" input: "i" input: "one:output:0"
      attr { key: "T" value { type: DT_INT32 } } }
    node_def { name: "read_w" op: "ReadVariableOp" input: "h"
      attr { key: "dtype" value { type: DT_FLOAT } } }
    node_def { name: "scaled" op: "Mul" input: "acc" input: "read_w:value:0"
      attr { key: "T" value { type: DT_FLOAT } } }
    ret { key: "i1" value: "inc:z:0" } ret { key: "acc1" value: "scaled:z:0" }
    ret { key: "h1" value: "h" } ret { key: "n1" value: "n" } }
}
"""


async def test_a_while_reading_a_variable_runs_compiled_and_reads_its_current_value(
        both_ways):
    """Called, the While runs as one generated loop (its body reads the variable each
    iteration); lowered, as one compiled v1 loop: each run reads the value assigned
    last, and an uninitialized variable fails naming the read (and, called, the body)."""
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(READING_LOOP, graph_pb2.GraphDef()), name="")
    async with af.Session(graph=g, config=both_ways) as sess:
        for _ in range(2):
            with pytest.raises(errors.FailedPreconditionError,
                               match="Could not find variable w") as e:
                await sess.run("loop:1", {"n:0": 3})
            assert "read_w" in e.value.message
            if both_ways is not None:
                assert "function_node step" in e.value.message, e.value.message
        for w, n in (([2.0, -0.5], 3), ([2.0, -0.5], 4), ([0.5, 3.0], 4), ([1.5, 1.0], 0)):
            w = np.array(w, np.float32)
            await sess.run(g.get_operation_by_name("init"), {"w0:0": w})
            got = await sess.run("loop:1", {"n:0": n})
            np.testing.assert_array_equal(got, w ** n)
