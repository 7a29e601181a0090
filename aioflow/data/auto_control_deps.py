"""The automatic control dependencies TF adds to a function graph it traces (TF's
AutomaticControlDependencies, tensorflow/python/framework/auto_control_deps.py, as
func_graph_from_py_func applies it), for the graphs aioflow builds as TF traces them
(the gradient functions of If / Case / While).

Over the graph's ops in creation order: an op of a registered type that is stateful and
is not a resource read whose outputs nobody uses, or an op that is a library function
call, must run; an op reading a resource runs after the last op that wrote it, an op
writing one after the reads since the last write; stateful ops touching no resource run
in creation order. If anything must run, a NoOp waits for all of it and every returned
tensor's op waits for the NoOp; the ops that must run become the graph's control
outputs. (TF's handling of v1 loops, Merge/Switch, collectives and order-insensitive ops
is not needed in these graphs and not built.)"""

from __future__ import annotations

from aioflow.framework import dtypes, op_def_registry, ops
from aioflow.framework.op_def_library import apply_op

#: Ops that only read the resource inputs they take (TF's register_read_only_resource_op).
RESOURCE_READ_OPS = frozenset({"ReadVariableOp", "VariableShape", "ResourceGather",
                               "ResourceGatherNd", "_ReadVariablesOp"})
READ_ONLY_RESOURCE_INPUTS_ATTR = "_read_only_resource_inputs"


def read_only_resource_input_indices(op) -> list[int]:
    """The indices of `op`'s resource inputs it only reads."""
    if op.type in RESOURCE_READ_OPS:
        return [i for i, t in enumerate(op.inputs) if t.dtype == dtypes.resource]
    try:
        listed = set(op.get_attr(READ_ONLY_RESOURCE_INPUTS_ATTR))
    except (ValueError, KeyError):
        return []
    return [i for i, t in enumerate(op.inputs) if t.dtype == dtypes.resource and i in listed]


def read_only_resource_inputs(graph) -> set[int]:
    """Indices of the graph's resource inputs that every consumer only reads."""
    result = set()
    for index, t in enumerate(graph.inputs):
        if t.dtype == dtypes.resource and all(
                any(t is op.inputs[i] for i in read_only_resource_input_indices(op))
                for op in t.consumers()):
            result.add(index)
    return result


def _is_stateful(op) -> bool:
    op_def = op.op_def
    return op_def is not None and op_def.is_stateful


def _must_run(op) -> bool:
    if op_def_registry.get_registration(op.type) is None:  # a library function's call
        return True
    return _is_stateful(op) and (op.type not in RESOURCE_READ_OPS
                                 or any(t.consumers() for t in op.outputs))


def add_control_dependencies(graph: ops.Graph, returned: list) -> list:
    """Apply TF's automatic control dependencies to `graph`, whose results are
    `returned`; the ops that must run (the graph's control outputs)."""
    last_write: dict = {}
    reads_since_write: dict = {}
    must_run = []
    for op in graph.get_operations():
        if _must_run(op):
            must_run.append(op)
        control_inputs = []
        seen = set()
        read_only = set(read_only_resource_input_indices(op))
        for i, t in enumerate(op.inputs):
            if t.dtype != dtypes.resource or id(t) in seen:
                continue
            seen.add(id(t))
            key = id(t)
            if key in last_write:
                control_inputs.append(last_write[key])
            if i in read_only:
                reads_since_write.setdefault(key, []).append(op)
            else:
                control_inputs.extend(reads_since_write.pop(key, []))
                last_write[key] = op
        if _is_stateful(op) and not seen:
            if None in last_write:
                op._add_control_inputs([last_write[None]])
            last_write[None] = op
        if control_inputs:
            op._add_control_inputs(control_inputs)
    if must_run and returned:
        with graph.as_default():
            no_op = apply_op("NoOp")
        no_op._add_control_inputs(must_run)
        for t in returned:
            t.op._add_control_inputs([no_op])
    return must_run
