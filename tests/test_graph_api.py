"""The Python graph API: naming, name scopes, control dependencies, devices, colocation,
collections, lookups, finalize, versions, import_graph_def, and per-task default graphs."""

from __future__ import annotations

import asyncio

import pytest

import aioflow.api as af
from aioflow.proto import attr_value_pb2


def _const(name=None):
    return af.constant(1.0, name=name) if name else af.constant(1.0)


# -- naming ----------------------------------------------------------------------------------

def test_unique_names(graph):
    x = af.placeholder(af.float32, [2], name="x")
    assert [(x + 1.0).op.name, (x + 1.0).op.name, (x + 1.0).op.name] == ["add", "add_1", "add_2"]
    assert af.identity(x, name="add_3").op.name == "add_3"
    assert (x + 1.0).op.name == "add_4"
    assert _const("c_1").op.name == "c_1"
    assert [_const("c").op.name, _const("c").op.name] == ["c", "c_2"]


def test_unique_names_are_case_insensitive(graph):
    assert _const("add").op.name == "add"
    assert _const("Add").op.name == "Add_1"
    assert _const("ADD").op.name == "ADD_2"


def test_unique_name_without_marking(graph):
    assert graph.unique_name("foo", mark_as_used=False) == "foo"
    assert graph.unique_name("foo") == "foo"
    assert graph.unique_name("foo", mark_as_used=False) == "foo_1"
    assert graph.unique_name("foo") == "foo_1"


def test_invalid_op_name(graph):
    with pytest.raises(ValueError, match="not a valid"):
        _const("bad name")


# -- name scopes -------------------------------------------------------------------------------

def test_nested_and_reused_scopes(graph):
    with af.name_scope("scope") as s:
        assert s == "scope/"
        with af.name_scope("inner") as inner:
            assert inner == "scope/inner/"
            assert _const().op.name == "scope/inner/Const"
        assert _const().op.name == "scope/Const"
    with af.name_scope("scope") as s:
        assert s == "scope_1/"
        assert _const().op.name == "scope_1/Const"
    assert graph.get_name_scope() == ""


def test_absolute_scope_and_reset(graph):
    with af.name_scope("outer"):
        with af.name_scope("a/") as s:
            assert s == "a/"
            assert _const().op.name == "a/Const"
        with af.name_scope(None) as s:
            assert s == ""
            assert _const().op.name == "Const"
        with af.name_scope("") as s:
            assert s == ""
        assert graph.get_name_scope() == "outer"


def test_name_scope_default_name_and_values(graph):
    x = af.placeholder(af.float32, [], name="x")
    with af.name_scope(None, "default", [x]) as s:
        assert s == "default/"
    with af.name_scope("given", "default", [x]) as s:
        assert s == "given/"
    with pytest.raises(ValueError, match="At least one of name"):
        with af.name_scope(None, None, [x]):
            pass


def test_name_scope_enters_graph_of_values():
    g1, g2 = af.Graph(), af.Graph()
    with g2.as_default():
        y = af.constant(2.0, name="y")
    with g1.as_default():
        with af.name_scope(None, "op", [y]) as s:
            assert s == "op/"
            assert af.get_default_graph() is g2
            assert _const().op.name == "op/Const"
        assert af.get_default_graph() is g1
    assert g1.get_operations() == []


def test_invalid_scope_name(graph):
    with pytest.raises(ValueError, match="not a valid scope name"):
        with af.name_scope("-bad"):
            pass
    with af.name_scope("ok"):
        with af.name_scope("-fine_inside"):  # later characters may start with '-'
            pass


# -- control dependencies --------------------------------------------------------------------

def _controls(op):
    return [c.name for c in op.control_inputs]


def test_control_dependencies_nesting_and_none(graph):
    x = af.placeholder(af.float32, [2], name="x")
    a = af.identity(x, name="a")
    b = af.identity(x, name="b")
    with af.control_dependencies([a]):
        c = af.identity(x, name="c")
        with af.control_dependencies([b.op]):
            d = af.identity(x, name="d")
            with af.control_dependencies(None):
                e = af.identity(x, name="e")
            f = af.identity(c, name="f")  # c was created under [a]: only b is added
    g = af.identity(x, name="g")
    assert _controls(c.op) == ["a"]
    assert _controls(d.op) == ["a", "b"]
    assert _controls(e.op) == []
    assert _controls(f.op) == ["b"]
    assert _controls(g.op) == []


def test_no_control_input_when_already_a_data_input(graph):
    x = af.placeholder(af.float32, [2], name="x")
    a = af.identity(x, name="a")
    with af.control_dependencies([a]):
        f = af.identity(a, name="f")
        k = af.constant(5.0, name="k")
    assert _controls(f.op) == []
    assert _controls(k.op) == ["a"]
    node = f.op.node_def
    assert list(node.input) == ["a"]


def test_manual_control_dependency_attr(graph):
    x = af.placeholder(af.float32, [2], name="x")
    a = af.identity(x, name="a")
    with af.control_dependencies([a]):
        af.identity(x, name="c")
    assert a.op.get_attr("_has_manual_control_dependencies") is True
    assert "_has_manual_control_dependencies" not in x.op.node_def.attr


def test_control_inputs_sorted_in_graph_def(graph):
    x = af.placeholder(af.float32, [2], name="x")
    zb = af.identity(x, name="zb")
    ya = af.identity(x, name="ya")
    with af.control_dependencies([zb, ya]):
        out = af.identity(x, name="out")
    assert _controls(out.op) == ["zb", "ya"]
    node = {n.name: n for n in graph.as_graph_def().node}["out"]
    assert list(node.input) == ["x", "^ya", "^zb"]


def test_control_dependencies_rejects_non_ops(graph):
    with pytest.raises(TypeError):
        with af.control_dependencies([3]):
            pass


def test_control_dependencies_accept_names(graph):
    a = af.constant(1.0, name="a")
    with af.control_dependencies(["a"]):
        b = af.constant(2.0, name="b")
    assert b.op.control_inputs == [a.op]


# -- devices -----------------------------------------------------------------------------------

def test_device_scopes(graph):
    full = "/job:localhost/replica:0/task:0/device:CPU:1"
    with af.device(full):
        a = _const()
        with af.device("/cpu:2"):
            b = _const()
        with af.device("/job:worker"):
            c = _const()
        with af.device(None):
            d = _const()
    with af.device("/cpu:1"):
        e = _const()
        with af.device("/gpu:0"):
            f = _const()
    assert a.device == full
    assert b.device == "/job:localhost/replica:0/task:0/device:CPU:2"
    assert c.device == "/job:worker/replica:0/task:0/device:CPU:1"
    assert d.device == ""
    assert e.device == "/device:CPU:1"
    assert f.device == "/device:GPU:0"
    assert _const().device == ""
    assert {n.name: n.device for n in graph.as_graph_def().node}[e.op.name] == "/device:CPU:1"


def test_device_function(graph):
    def place(op):
        return "/cpu:3" if op.type == "Const" else ""

    with af.device(place):
        c = _const()
        i = af.identity(c)
    assert c.device == "/device:CPU:3"
    assert i.device == ""


# -- colocation ------------------------------------------------------------------------------

def test_colocate_with(graph):
    with af.device("/gpu:0"):
        x = af.constant(1.0, name="x")
    with af.device("/cpu:0"):
        with af.colocate_with(x):
            y = af.identity(x, name="y")
            with af.colocate_with(y.op):
                z = af.identity(y, name="z")
    assert y.op.get_attr("_class") == [b"loc:@x"]
    assert y.device == "/device:GPU:0"  # the colocation op's device wins
    assert z.op.get_attr("_class") == [b"loc:@x"]  # y's group is x's group
    expected = attr_value_pb2.AttrValue()
    expected.list.s.append(b"loc:@x")
    assert y.op.node_def.attr["_class"] == expected


def test_colocate_with_ignore_existing(graph):
    a = af.constant(1.0, name="a")
    b = af.constant(1.0, name="b")
    with af.colocate_with(a):
        with af.colocate_with(b, ignore_existing=True):
            c = af.identity(b, name="c")
        d = af.identity(b, name="d")
    assert c.op.get_attr("_class") == [b"loc:@b"]
    assert d.op.get_attr("_class") == [b"loc:@a"]


# -- collections -------------------------------------------------------------------------------

def test_collections(graph):
    a = af.constant(1.0, name="a")
    b = af.constant(1.0, name="scope/b")
    af.add_to_collection("things", a)
    af.add_to_collection("things", b)
    got = af.get_collection("things")
    assert got == [a, b]
    got.append("x")
    assert af.get_collection("things") == [a, b]
    assert af.get_collection("things", scope="scope") == [b]
    ref = af.get_collection_ref("things")
    ref.append(3)
    assert af.get_collection("things")[-1] == 3
    assert af.get_collection("missing") == []
    assert graph.get_all_collection_keys() == ["things"]


# -- lookups ---------------------------------------------------------------------------------

def test_get_by_name(graph):
    x = af.placeholder(af.float32, [2], name="x")
    assert graph.get_tensor_by_name("x:0") is x
    assert graph.get_operation_by_name("x") is x.op
    with pytest.raises(KeyError, match="The operation, 'nope', does not exist"):
        graph.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        graph.get_tensor_by_name("x:1")
    with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
        graph.get_tensor_by_name("x")
    with pytest.raises(ValueError, match="looks like an \\(invalid\\) Operation name"):
        graph.get_tensor_by_name("nope")
    with pytest.raises(ValueError, match="looks a like a Tensor name"):
        graph.get_tensor_by_name("x:a")
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        graph.get_operation_by_name("nope")
    with pytest.raises(ValueError, match="appears to refer to a Tensor, not a Operation"):
        graph.get_operation_by_name("x:0")
    with pytest.raises(TypeError):
        graph.get_operation_by_name(3)


# -- finalize, versions --------------------------------------------------------------------

def test_finalize():
    g = af.Graph()
    with g.as_default():
        af.constant(1.0)
    g.finalize()
    assert g.finalized
    with g.as_default(), pytest.raises(RuntimeError, match="finalized"):
        af.constant(2.0)


def test_version_and_incremental_graph_def(graph):
    assert graph.version == 0
    x = af.placeholder(af.float32, [2], name="x")
    v = graph.version
    assert v == 1
    y = x * 2.0
    assert graph.version == 3
    assert [n.name for n in graph.as_graph_def(from_version=v).node] == ["mul/y", "mul"]
    assert [n.name for n in graph.as_graph_def().node] == ["x", "mul/y", "mul"]
    assert graph.as_graph_def(from_version=graph.version).node == []
    assert y.op.name == "mul"


def test_reset_default_graph():
    g = af.get_default_graph()
    af.reset_default_graph()
    assert af.get_default_graph() is not g
    with af.Graph().as_default(), pytest.raises(AssertionError):
        af.reset_default_graph()


# -- import_graph_def --------------------------------------------------------------------------

@pytest.fixture
def src_def():
    src = af.Graph()
    with src.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        af.identity(x * 2.0 + 1.0, name="out")
        af.no_op(name="done")
    return src.as_graph_def()


def test_import_prefix_input_map_return_elements(graph, src_def):
    inp = af.placeholder(af.float32, [None], name="inp")
    out, done = af.import_graph_def(src_def, input_map={"x:0": inp},
                                    return_elements=["out:0", "done"], name="imp")
    assert out.name == "imp/out:0" and done.name == "imp/done"
    assert out.shape.as_list() == [None]
    assert graph.get_operation_by_name("imp/mul").inputs[0] is inp
    (out2,) = af.import_graph_def(src_def, input_map={"x": out}, return_elements=["out:0"],
                                  name="imp")
    assert out2.name == "imp_1/out:0"
    assert graph.get_operation_by_name("imp_1/mul").inputs[0] is out
    assert af.import_graph_def(src_def, name="") is None
    assert graph.get_operation_by_name("out").type == "Identity"


def test_import_default_prefix_inside_scope(graph, src_def):
    with af.name_scope("outer"):
        (out,) = af.import_graph_def(src_def, return_elements=["out:0"])
    assert out.name == "outer/import/out:0"


def test_import_devices_are_canonical_and_scoped(graph, src_def):
    src_def.node[0].device = "/cpu:0"
    af.import_graph_def(src_def, name="a")
    with af.device("/job:worker"):
        af.import_graph_def(src_def, name="b")
    assert graph.get_operation_by_name("a/x").device == "/device:CPU:0"
    assert graph.get_operation_by_name("b/x").device == "/job:worker/device:CPU:0"
    assert graph.get_operation_by_name("b/out").device == "/job:worker"


def test_import_errors(graph, src_def):
    inp = af.placeholder(af.float32, [None], name="inp")
    with pytest.raises(ValueError, match="not found in graph_def"):
        af.import_graph_def(src_def, input_map={"zz:0": inp})
    with pytest.raises(ValueError, match="nope"):
        af.import_graph_def(src_def, return_elements=["nope:0"])
    with pytest.raises(TypeError):
        af.import_graph_def("not a graph def")


# -- default graphs per asyncio task -----------------------------------------------------

async def test_concurrent_tasks_keep_their_default_graph():
    async def build(g, tag):
        with g.as_default():
            x = af.placeholder(af.float32, [], name="x")
            for i in range(10):
                x = x + float(i)
                await asyncio.sleep(0)
                assert af.get_default_graph() is g
            af.identity(x, name=tag)
        return g

    g1, g2 = af.Graph(), af.Graph()
    outer = af.get_default_graph()
    await asyncio.gather(build(g1, "one"), build(g2, "two"))
    assert af.get_default_graph() is outer
    assert [op.name for op in g1.get_operations()][-1] == "one"
    assert [op.name for op in g2.get_operations()][-1] == "two"
    assert len(g1.get_operations()) == len(g2.get_operations()) == 1 + 2 * 10 + 1
