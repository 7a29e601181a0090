"""Writes the variable fixtures (tests/data/variables_*): GraphDefs TensorFlow 2.21 writes
for tf.compat.v1 variable programs, and the values TF computes from them. Run with the
throwaway TF environment: TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python
tests/data/make_variable_fixtures.py"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.framework import op_def_registry

v1 = tf.compat.v1
v1.disable_v2_behavior()
OUT = Path(__file__).parent


def ref_program():
    """tf.compat.v1.Variable and get_variable, ref variables: init, read, assign_add."""
    v = v1.Variable([1.0, 2.0], name="v")
    w = v1.get_variable("w", shape=[2, 3], initializer=v1.ones_initializer())
    with v1.variable_scope("scope"):
        c = v1.get_variable("c", initializer=v1.constant_initializer(7), shape=[],
                            dtype=tf.int64)
    v1.assign_add(v, [10.0, 20.0], name="add")
    tf.add(tf.reduce_sum(w), tf.reduce_sum(v), name="total")
    v1.assign_add(c, 1, name="inc")
    v1.global_variables_initializer()
    return {"fetch": ["total:0"], "targets": ["add", "inc"], "after": ["v:0", "scope/c:0"]}


def resource_program():
    """The same with resource variables (use_resource=True)."""
    v = v1.Variable([1.0, 2.0], name="v", use_resource=True)
    w = v1.get_variable("w", shape=[2, 3], initializer=v1.ones_initializer(),
                        use_resource=True)
    with v1.variable_scope("scope"):
        c = v1.get_variable("c", initializer=v1.constant_initializer(7), shape=[],
                            dtype=tf.int64, use_resource=True)
    add = v1.assign_add(v, [10.0, 20.0], name="add")
    tf.add(tf.reduce_sum(w), tf.reduce_sum(v), name="total")
    inc = v1.assign_add(c, 1, name="inc")
    v1.global_variables_initializer()
    return {"fetch": ["total:0"], "targets": [add.name.split(":")[0], inc.name.split(":")[0]],
            "after": ["v/Read/ReadVariableOp:0", "scope/c/Read/ReadVariableOp:0"]}


def while_program():
    """A ref variable updated inside a while loop (10 iterations of assign_add)."""
    v = v1.Variable(0.0, name="acc")

    def body(i):
        with tf.control_dependencies([v1.assign_add(v, tf.cast(i, tf.float32))]):
            return i + 1

    loop = v1.while_loop(lambda i: i < 10, body, [tf.constant(0)], name="loop")
    tf.identity(loop, name="out")
    v1.global_variables_initializer()
    return {"fetch": ["out:0"], "targets": [], "after": ["acc:0"]}


def cond_program():
    """A ref variable updated in the branches of a cond (RefSwitch, RefMerge)."""
    v = v1.Variable(1.0, name="v")
    p = v1.placeholder_with_default(True, [], name="p")
    out = v1.cond(p, lambda: v1.assign_add(v, 10.0), lambda: v1.assign_sub(v, 1.0))
    tf.identity(out, name="out")
    v1.global_variables_initializer()
    return {"fetch": ["out:0"], "targets": [], "after": ["v:0"]}


def shared_kernel_values() -> list:
    """A seeded random op's values fetched from two fetch signatures in turn: one kernel
    (TF's OpSegment), so the second run continues the first's sequence."""
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(7)
        r = v1.random_uniform([3], seed=1, name="r")
        other = tf.identity(r, name="other")
        with v1.Session(graph=g) as sess:
            first = sess.run(r)
            second = sess.run([r, other])[0]
            third = sess.run(other)
    return [first.tolist(), second.tolist(), third.tolist()]


def main() -> None:
    results = {}
    for name, program in (("ref", ref_program), ("resource", resource_program),
                          ("while", while_program), ("cond", cond_program)):
        g = tf.Graph()
        with g.as_default():
            spec = program()
            init = [op.name for op in g.get_operations() if op.name == "init"][0]
            graph_def = g.as_graph_def()
            (OUT / f"variables_{name}.pb").write_bytes(
                graph_def.SerializeToString(deterministic=True))
            with v1.Session(graph=g) as sess:
                sess.run(init)
                fetched = sess.run(spec["fetch"])
                sess.run(spec["targets"])
                after = sess.run(spec["after"])
            spec["init"] = init
            spec["values"] = [np.asarray(x).tolist() for x in fetched]
            spec["after_values"] = [np.asarray(x).tolist() for x in after]
            results[name] = spec
    results["shared_kernel"] = shared_kernel_values()
    (OUT / "variables_values.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    op_list = op_def_pb2.OpList()
    for name in OP_NAMES:
        op_list.op.add().CopyFrom(op_def_registry.get(name))
    (OUT / "variables_op_defs.pb").write_bytes(op_list.SerializeToString(deterministic=True))


OP_NAMES = ["VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub",
            "IsVariableInitialized", "CountUpTo", "RefIdentity", "ScatterUpdate", "ScatterAdd",
            "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin", "ScatterMax",
            "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub", "VarHandleOp", "ReadVariableOp",
            "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceGather",
            "ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub",
            "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMin",
            "ResourceScatterMax", "VarIsInitializedOp", "VariableShape", "DestroyResourceOp"]


if __name__ == "__main__":
    main()
