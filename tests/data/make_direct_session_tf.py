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

path = Path(__file__).with_name("direct_session_tf.json")
path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
print(path)
