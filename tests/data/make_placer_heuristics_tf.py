"""Writes placer_heuristics_tf.json: where TF 2.21's Placer and ReplicateConstantsPass put
nodes across two CPU devices (generators with their consumers, metadata ops and plain
Identity nodes with their input, small constants copied to each consumer device; a
metadata op's output leaves its device by _HostSend), as the
partition graphs of a run show them, optimizers off; and after a second extension that
gives an earlier generator a consumer on the other device.
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_placer_heuristics_tf.py"""

import json
from pathlib import Path


def build(tf):
    """The graph; `tf` is TF's v1 API or aioflow (the test builds it with aioflow)."""
    x = tf.placeholder(tf.float32, [2], name="x")
    u = tf.placeholder(tf.float32, None, name="u")  # unknown shape: tf.shape stays a Shape
    c = tf.constant([1.0, 2.0], name="c")  # one consumer, on /cpu:1
    c2 = tf.constant([3.0, 4.0], name="c2")  # consumers on both devices: replicated
    c3 = tf.constant([5.0, 6.0], name="c3")  # two consumers, both on /cpu:1
    big = tf.constant([0.5] * 17, name="big")  # 17 elements: too large to replicate
    with tf.device("/cpu:1"):
        y = tf.add(x, c, name="y")
        y2 = tf.add(y, c2, name="y2")
        y3 = tf.multiply(y2, c3, name="y3")
        y4 = tf.add(y3, c3, name="y4")
        ub = tf.add(u, 1.0, name="ub")
        big1 = tf.reduce_sum(big, name="big1")
        ctl = tf.constant(9.0, name="ctl")  # a control edge out: not replicated
    z = tf.add(y4, c2, name="z")
    big0 = tf.reduce_max(big, name="big0")
    s = tf.shape(ub, name="s")  # metadata: with its input
    r = tf.rank(ub, name="r")
    sz = tf.size(ub, name="sz")
    i = tf.identity(y4, name="i")  # Identity whose ends request different devices
    with tf.device("/cpu:1"):
        j_in = tf.add(y4, 1.0, name="j_in")
    j = tf.identity(j_in, name="j")  # one consumer on /cpu:1 as requested as its input
    with tf.device("/cpu:1"):
        j_out = tf.multiply(j, 2.0, name="j_out")
    with tf.control_dependencies([ctl]):
        after = tf.identity(z, name="after")
    with tf.control_dependencies([y4]):
        cc = tf.constant(7.0, name="cc")  # a control input from /cpu:1, no consumer
    late = tf.constant([8.0, 8.0], name="late")  # no consumer yet
    fetches = [z, s, r, sz, i, j_out, after, cc, big0, big1, late]
    feeds = {x: [1.0, 1.0], u: [[1.0, 2.0]]}
    return fetches, feeds, late


def extension(tf, late):
    """A second extension: `late` gets its only consumer, on /cpu:1."""
    with tf.device("/cpu:1"):
        return tf.add(late, 1.0, name="late_user")


def described(run_metadata):
    return sorted([n.name, n.op, n.device] for g in run_metadata.partition_graphs
                  for n in g.node)


if __name__ == "__main__":  # (the test imports build and extension without TF)
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    config = v1.ConfigProto(
        device_count={"CPU": 2},
        graph_options=v1.GraphOptions(
            optimizer_options=v1.OptimizerOptions(opt_level=v1.OptimizerOptions.L0,
                                                  do_constant_folding=False,
                                                  do_common_subexpression_elimination=False,
                                                  do_function_inlining=False),
            rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)))
    options = v1.RunOptions(output_partition_graphs=True)
    g = tf.Graph()
    with g.as_default():
        fetches, feeds, late = build(v1)
        feeds = {g.get_tensor_by_name(k.name): v for k, v in feeds.items()}
        sess = v1.Session(graph=g, config=config)
        first = v1.RunMetadata()
        values = sess.run(fetches, feeds, options=options, run_metadata=first)
        late_user = extension(v1, late)
        second = v1.RunMetadata()
        late_value = sess.run(late_user, options=options, run_metadata=second)
    out = {"first": described(first), "second": described(second),
           "values": [v.tolist() for v in values], "late_user": late_value.tolist()}
    path = Path(__file__).with_name("placer_heuristics_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
