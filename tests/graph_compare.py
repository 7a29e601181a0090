"""Comparing a GraphDef aioflow built with the one TensorFlow wrote, node by node."""

from __future__ import annotations

import re

from aioflow.proto import graph_pb2


def _describe(attr) -> str:
    if not hasattr(attr, "ListFields") and hasattr(attr, "items"):  # a proto map
        return " ".join(f"{k}: {' '.join(str(v).split())}" for k, v in sorted(attr.items()))
    return " ".join(str(attr).split())


def assert_same_graph(mine: graph_pb2.GraphDef, ref: graph_pb2.GraphDef) -> None:
    """Node names (in order), ops, inputs, devices and attrs all equal."""
    ref_names = [n.name for n in ref.node]
    mine_names = [n.name for n in mine.node]
    assert sorted(mine_names) == sorted(ref_names), (
        f"missing: {sorted(set(ref_names) - set(mine_names))}, "
        f"extra: {sorted(set(mine_names) - set(ref_names))}")
    assert mine_names == ref_names
    problems = []
    for m, r in zip(mine.node, ref.node, strict=True):
        if m.op != r.op:
            problems.append(f"{r.name}: op {m.op} != {r.op}")
        if list(m.input) != list(r.input):
            problems.append(f"{r.name}: inputs {list(m.input)} != {list(r.input)}")
        if m.device != r.device:
            problems.append(f"{r.name}: device {m.device!r} != {r.device!r}")
        for key in sorted(set(m.attr) | set(r.attr)):
            if key not in m.attr or key not in r.attr or m.attr[key] != r.attr[key]:
                mv = _describe(m.attr[key]) if key in m.attr else "<missing>"
                rv = _describe(r.attr[key]) if key in r.attr else "<missing>"
                problems.append(f"{r.name}: attr {key}: {mv} != {rv}")
    assert not problems, "\n".join(problems)


_GRAD_UID = re.compile(r"_grad_(\d+)")


def normalize_function_uids(graph_def: graph_pb2.GraphDef) -> graph_pb2.GraphDef:
    """A copy of `graph_def` whose gradient functions' names lose TF's run-dependent
    numbers: TF names a gradient function `<forward>_grad_<uid>` with a process-wide
    counter (nested: `<forward>_grad_<uid>_grad_<uid>`); each uid becomes `<k>`, its rank
    among the uids the GraphDef names (so the order in which the functions were made is
    still compared). Every other name is kept."""
    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    names = [f.signature.name for f in out.library.function]
    uids = sorted({int(u) for name in names for u in _GRAD_UID.findall(name)})
    rank = {u: k for k, u in enumerate(uids, 1)}

    def rename(name: str) -> str:
        if name not in names:
            return name
        return _GRAD_UID.sub(lambda m: f"_grad_<{rank[int(m.group(1))]}>", name)

    def fix_attrs(attrs) -> None:
        for value in attrs.values():
            if value.HasField("func"):
                value.func.name = rename(value.func.name)
            for func in value.list.func:
                func.name = rename(func.name)

    for node in out.node:
        fix_attrs(node.attr)
    for fdef in out.library.function:
        for node in fdef.node_def:
            fix_attrs(node.attr)
            node.op = rename(node.op)
        fdef.signature.name = rename(fdef.signature.name)
    for grad in out.library.gradient:
        grad.function_name = rename(grad.function_name)
        grad.gradient_func = rename(grad.gradient_func)
    return out


def assert_same_library(mine: graph_pb2.GraphDef, ref: graph_pb2.GraphDef) -> None:
    """The function libraries hold the same functions, each equal field by field and
    node for node (names, ops, inputs in FunctionDef form, attrs, in order)."""
    mine_f = {f.signature.name: f for f in mine.library.function}
    ref_f = {f.signature.name: f for f in ref.library.function}
    assert sorted(mine_f) == sorted(ref_f), (
        f"missing: {sorted(set(ref_f) - set(mine_f))}, extra: {sorted(set(mine_f) - set(ref_f))}")
    assert sorted((g.function_name, g.gradient_func) for g in mine.library.gradient) == \
        sorted((g.function_name, g.gradient_func) for g in ref.library.gradient)
    problems = []
    for name in sorted(ref_f):
        m, r = mine_f[name], ref_f[name]
        for field in ("signature", "attr", "arg_attr", "ret", "control_ret",
                      "resource_arg_unique_id"):
            mv, rv = getattr(m, field), getattr(r, field)
            if field != "signature":
                mv, rv = dict(mv), dict(rv)
            if mv != rv:
                problems.append(f"{name}: {field}:\n  {_describe(getattr(m, field))}\n  != "
                                f"{_describe(getattr(r, field))}")
        mine_nodes = graph_pb2.GraphDef(node=m.node_def)
        ref_nodes = graph_pb2.GraphDef(node=r.node_def)
        try:
            assert_same_graph(mine_nodes, ref_nodes)
        except AssertionError as e:
            problems.append(f"{name}: nodes: {e}")
    assert not problems, "\n".join(problems)
