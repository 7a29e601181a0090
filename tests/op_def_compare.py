"""Comparing aioflow's registered OpDefs with TensorFlow's, field by field: both sides
without their documentation (summary, descriptions), each allowed type listed once (TF
repeats some, e.g. ResizeBilinear's bfloat16)."""

from __future__ import annotations

from aioflow.framework import op_def_registry
from aioflow.proto import op_def_pb2


def without_docs(op_def: op_def_pb2.OpDef) -> op_def_pb2.OpDef:
    """A copy of `op_def` with no documentation and no repeated allowed type."""
    out = op_def_pb2.OpDef()
    out.CopyFrom(op_def)
    out.ClearField("summary")
    out.ClearField("description")
    for arg in list(out.input_arg) + list(out.output_arg):
        arg.ClearField("description")
    for attr in out.attr:
        attr.ClearField("description")
        types = list(dict.fromkeys(attr.allowed_values.list.type))
        if len(types) != len(attr.allowed_values.list.type):
            del attr.allowed_values.list.type[:]
            attr.allowed_values.list.type.extend(types)
    return out


def ours(name: str) -> op_def_pb2.OpDef:
    """The registered OpDef of `name`, without documentation."""
    return without_docs(op_def_registry.get(name))


def assert_equal_to_tf(tf_op_defs) -> None:
    """Each of TF's OpDefs (an OpList, or OpDefs) equals the registered one."""
    for want in getattr(tf_op_defs, "op", tf_op_defs):
        want = without_docs(want)
        got = ours(want.name)
        assert got == want, (want.name, got, want)
