"""Writes direct_session_tf.json: what TF 2.21's DirectSession answers for partial runs
(TF's documented example and each error), an unknown executor type, out-of-range
RunOptions.inter_op_thread_pool indices, and a named global pool configured twice.
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_direct_session_tf.py"""

import json
from pathlib import Path

import tensorflow as tf
from tensorflow.core.protobuf.config_pb2 import ThreadPoolOptionProto

v1 = tf.compat.v1
v1.disable_eager_execution()
PREFIX = "Graph execution error:\n\n"
out = {}


def outcome(f):
    try:
        value = f()
        return {"value": value.tolist() if hasattr(value, "tolist") else value}
    except Exception as e:  # noqa: BLE001 - the error is the fixture
        text = str(e)
        text = text[len(PREFIX):] if text.startswith(PREFIX) else text
        if text.startswith("Detected at node"):  # the Python traceback TF puts first
            text = text.rsplit("\nNode: ", 1)[1].split("\n", 1)[1]
        return {"error": type(e).__name__, "message": text.split("\n")[0]}


g = tf.Graph()
with g.as_default():
    a = v1.placeholder(tf.float32, shape=[], name="a")
    b = v1.placeholder(tf.float32, shape=[], name="b")
    c = v1.placeholder(tf.float32, shape=[], name="c")
    r1 = tf.add(a, b, name="r1")
    r2 = tf.multiply(r1, c, name="r2")
    s = v1.Session(graph=g)
    # TF's documented example (Session.partial_run's docstring).
    h = s.partial_run_setup([r1, r2], [a, b, c])
    out["handle"] = h
    out["example_r1"] = outcome(lambda: s.partial_run(h, r1, feed_dict={a: 1, b: 2}))
    out["feed_twice"] = outcome(lambda: s.partial_run(h, r2, feed_dict={a: 5, c: 3}))
    out["fetch_twice"] = outcome(lambda: s.partial_run(h, r1, feed_dict={c: 3}))
    out["example_r2"] = outcome(lambda: s.partial_run(h, r2, feed_dict={c: 3}))
    out["after_done"] = outcome(lambda: s.partial_run(h, r2, feed_dict={c: 3}))
    h = s.partial_run_setup([r1], [a, b])
    out["undeclared_feed"] = outcome(lambda: s.partial_run(h, r1, feed_dict={a: 1, c: 2}))
    out["undeclared_fetch"] = outcome(lambda: s.partial_run(h, r2, feed_dict={a: 1, b: 2}))
    h = s.partial_run_setup([r1, r2], [a, b, c])
    out["not_fed_r2"] = outcome(lambda: s.partial_run(h, r2, feed_dict={a: 1, b: 2}))
    h = s.partial_run_setup([r1, r2], [a, b, c])
    out["not_fed_r1"] = outcome(lambda: s.partial_run(h, r1, feed_dict={a: 1}))
    out["unknown_handle"] = outcome(lambda: s.partial_run("foo;1", r1, feed_dict={a: 1, b: 2}))
    for index in (3, -2, -1):
        options = v1.RunOptions(inter_op_thread_pool=index)
        out[f"pool_index_{index}"] = outcome(lambda o=options: s.run(r1, {a: 1, b: 2},
                                                                    options=o))
    config = v1.ConfigProto(session_inter_op_thread_pool=[
        ThreadPoolOptionProto(num_threads=2, global_name="direct_g1")])
    s2 = v1.Session(graph=g, config=config)
    for index in (0, 1):
        options = v1.RunOptions(inter_op_thread_pool=index)
        out[f"one_pool_index_{index}"] = outcome(lambda o=options: s2.run(r1, {a: 1, b: 2},
                                                                          options=o))
    config = v1.ConfigProto(session_inter_op_thread_pool=[
        ThreadPoolOptionProto(num_threads=3, global_name="direct_g1")])
    s3 = v1.Session(graph=g, config=config)
    out["global_pool_reconfigured"] = outcome(lambda: s3.run(r1, {a: 1, b: 2}))
    config = v1.ConfigProto()
    config.experimental.executor_type = "FOO"
    out["unknown_executor_type"] = outcome(
        lambda: v1.Session(graph=g, config=config).run(r1, {a: 1, b: 2}))
    s.close()
    out["after_close"] = outcome(lambda: s.partial_run(h, r1, feed_dict={a: 1, b: 2}))



# -- placement: place_pruned_graph, colocation groups with conflicting devices ----------
def device_of(sess, fetch, name, feed=None):
    md = v1.RunMetadata()
    sess.run(fetch, feed, options=v1.RunOptions(output_partition_graphs=True),
             run_metadata=md)
    return next(n.device for g in md.partition_graphs for n in g.node if n.name == name)


g = tf.Graph()
with g.as_default():
    x = v1.placeholder(tf.float32, [], name="x")
    with tf.device("/device:GPU:0"):
        unplaceable = tf.add(x, 1.0, name="unplaceable")
    fine = tf.multiply(x, 2.0, name="fine")
    for pruned in (False, True):
        config = v1.ConfigProto(graph_options=v1.GraphOptions(place_pruned_graph=pruned))
        s = v1.Session(graph=g, config=config)
        out[f"pruned_{pruned}_fine"] = outcome(lambda s=s: s.run(fine, {x: 3.0}))
        out[f"pruned_{pruned}_unplaceable"] = outcome(lambda s=s: s.run(unplaceable, {x: 3.0}))

# A stateful node stays where an earlier step's pruned graph placed it.
g = tf.Graph()
with g.as_default():
    v = v1.Variable(0.0, name="v", use_resource=False)
    init = v1.assign(v, 5.0, name="init")  # colocated with v (its _class)
    init.op._set_device("/device:CPU:1")  # the group asks for CPU:1 when init is in it
    config = v1.ConfigProto(device_count={"CPU": 2},
                            graph_options=v1.GraphOptions(place_pruned_graph=True))
    s = v1.Session(graph=g, config=config)
    s.run(init)
    out["pruned_stateful_read"] = outcome(lambda: s.run(v))
    out["pruned_stateful_device"] = outcome(lambda: device_of(s, v, "v"))

two_cpus = {"CPU": 2}
g = tf.Graph()
with g.as_default():
    with tf.device("/device:CPU:0"):
        a = tf.constant(1.0, name="a")
    with tf.device("/device:CPU:1"):
        b0 = tf.constant(2.0, name="b0")
        with v1.colocate_with(a):
            built = tf.identity(b0, name="built")  # the builder gives it a's device
    out["builder_colocated_device"] = built.device
    with v1.colocate_with(a):
        conflict = tf.identity(b0, name="conflict")
    conflict.op._set_device("/device:CPU:1")  # a group whose members ask for two devices
    graph_def = g.as_graph_def()
    out["conflict_graph_def"] = graph_def.SerializeToString().hex()
    s = v1.Session(graph=g, config=v1.ConfigProto(device_count=two_cpus))
    out["conflict_hard"] = outcome(lambda: s.run(conflict))
    s = v1.Session(graph=g, config=v1.ConfigProto(device_count=two_cpus,
                                                    allow_soft_placement=True))
    out["conflict_soft"] = outcome(lambda: s.run(conflict))
    out["conflict_soft_devices"] = {n: outcome(lambda n=n: device_of(s, conflict, n))
                                    for n in ("a", "conflict")}
g = tf.Graph()
with g.as_default():
    imported = graph_def.__class__()
    imported.ParseFromString(bytes.fromhex(out["conflict_graph_def"]))
    v1.import_graph_def(imported, name="")
    out["imported_devices"] = {op.name: op.device for op in g.get_operations()}

# -- Session.reset: the containers of every open session, then every one is closed ------
g = tf.Graph()
with g.as_default():
    v = v1.Variable(1.0, name="v", use_resource=False)
    s = v1.Session(graph=g)
    s.run(v.initializer)
    v1.Session.reset("", ["other"])
    out["run_after_reset"] = outcome(lambda: s.run(v))
    out["list_devices"] = [[d.name, d.device_type, d.memory_limit_bytes]
                           for d in v1.Session(graph=g).list_devices()]

path = Path(__file__).with_name("direct_session_tf.json")
path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
print(path)
