"""Writes import_colocation_tf.json: the devices and `_class` attrs TF 2.21's
import_graph_def gives imported ops that are colocated (by their own `_class`, or by a
`colocate_with` scope around the import), with and without device scopes and prefixes.
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_import_colocation_tf.py"""

import json
from pathlib import Path

import tensorflow as tf
from tensorflow.core.framework import graph_pb2

v1 = tf.compat.v1
v1.disable_eager_execution()


def described(graph):
    out = {}
    for op in graph.get_operations():
        try:
            groups = [s.decode() for s in op.get_attr("_class")]
        except ValueError:
            groups = None
        out[op.name] = {"device": op.device, "class": groups}
    return out


# A builder graph: b on /cpu:1, c colocated with a (no device), d on /cpu:0.
g = tf.Graph()
with g.as_default():
    a = tf.constant(1.0, name="a")
    with tf.device("/cpu:1"):
        b = tf.constant(2.0, name="b")
    with g.colocate_with(a):
        tf.identity(b, name="c")
    with tf.device("/cpu:0"):
        tf.identity(b, name="d")
built = g.as_graph_def()

# A hand-written one: e asks for /cpu:1 but is colocated with a (no device), f with e.
raw = graph_pb2.GraphDef()
node = raw.node.add(name="a", op="Const")
node.attr["dtype"].type = 1
node.attr["value"].tensor.dtype = 1
node.attr["value"].tensor.float_val.append(1.0)
for name, target in (("e", "a"), ("f", "e")):
    node = raw.node.add(name=name, op="Identity", input=["a"], device="/cpu:1")
    node.attr["T"].type = 1
    node.attr["_class"].list.s.append(b"loc:@" + target.encode())

scoped = tf.Graph()
with scoped.as_default():
    with tf.device("/cpu:2"):
        x = tf.constant(0.0, name="x")
    y = tf.constant(0.0, name="y")
    with scoped.colocate_with(x):
        tf.import_graph_def(built, name="i1")
    with scoped.colocate_with(y):
        tf.import_graph_def(built, name="i2")
    with tf.device("/cpu:3"):
        with scoped.colocate_with(x):
            tf.import_graph_def(built, name="i3")

plain = tf.Graph()
with plain.as_default():
    tf.import_graph_def(raw, name="")
    with tf.device("/cpu:3"):
        tf.import_graph_def(raw, name="s")
    tf.import_graph_def(built, name="j")

out = {"built_graph_def": built.SerializeToString().hex(),
       "raw_graph_def": raw.SerializeToString().hex(),
       "scoped": described(scoped), "plain": described(plain)}
path = Path(__file__).with_name("import_colocation_tf.json")
path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
print(f"wrote {path}")
