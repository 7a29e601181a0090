"""Make the cross-device while-loop fixtures: v1 while loops whose body TensorFlow
places partly on /cpu:1, the partition graphs TensorFlow's DirectSession ran (with the
control loops graph_partition.cc's AddControlFlow adds), and the values it computed.

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_loop_partition_fixture.py

Per case NAME (loop_two_cpus: one loop; loop_nested_two_cpus: an inner loop on both
devices inside an outer one, so the control loops stack) it writes NAME.pb (the
GraphDef), NAME_parts.pb (RunMetadata with the partition graphs), NAME.npz (feeds and
fetched values) and NAME.json (feeds, fetches). Optimizers are off (L0, no grappler),
so the partitions are the partitioner's own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def one_loop(tf):
    """acc <- 2 * acc + x, n times; the doubling runs on /cpu:1."""
    x = tf.placeholder(tf.float32, [2], name="x")
    n = tf.placeholder(tf.int32, [], name="n")

    def body(i, acc):
        with tf.device("/cpu:1"):
            y = tf.multiply(acc, 2.0, name="double")
        return i + 1, tf.add(y, x, name="plus_x")

    i_out, acc_out = tf.while_loop(lambda i, acc: i < n, body,
                                   [tf.constant(0, name="i0"), x], name="loop")
    feeds = {"x:0": np.array([1.0, 2.0], np.float32), "n:0": np.array(3, np.int32)}
    return feeds, [i_out, acc_out]


def nested_loops(tf):
    """Three outer iterations of two inner ones (acc <- 1.5 * acc + 1 on /cpu:1)."""
    x = tf.placeholder(tf.float32, [3], name="x")

    def outer_body(i, acc):
        def inner_body(j, a):
            with tf.device("/cpu:1"):
                b = tf.multiply(a, 1.5, name="scale")
            return j + 1, tf.add(b, 1.0, name="shift")

        _, inner_acc = tf.while_loop(lambda j, a: j < 2, inner_body,
                                     [tf.constant(0, name="j0"), acc], name="inner")
        return i + 1, inner_acc

    i_out, acc_out = tf.while_loop(lambda i, acc: i < 3, outer_body,
                                   [tf.constant(0, name="i0"), x], name="outer")
    return {"x:0": np.array([1.0, -2.0, 0.5], np.float32)}, [i_out, acc_out]


CASES = {"loop_two_cpus": one_loop, "loop_nested_two_cpus": nested_loops}


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    v1 = tf.compat.v1
    for name, build in CASES.items():
        g = tf.Graph()
        with g.as_default():
            feeds, fetches = build(v1)
        config = v1.ConfigProto(device_count={"CPU": 2})
        config.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        with v1.Session(graph=g, config=config) as sess:
            md = v1.RunMetadata()
            values = sess.run(fetches,
                              {g.get_tensor_by_name(k): v for k, v in feeds.items()},
                              options=v1.RunOptions(output_partition_graphs=True),
                              run_metadata=md)
        (HERE / f"{name}.pb").write_bytes(g.as_graph_def().SerializeToString(deterministic=True))
        (HERE / f"{name}_parts.pb").write_bytes(md.SerializeToString(deterministic=True))
        np.savez(HERE / f"{name}.npz", **{f"feed:{k}": v for k, v in feeds.items()},
                 **{f"fetch:{t.name}": v for t, v in zip(fetches, values, strict=True)})
        (HERE / f"{name}.json").write_text(json.dumps({
            "feeds": sorted(feeds), "fetches": [t.name for t in fetches],
            "tensorflow": tf.__version__}, indent=2) + "\n")


if __name__ == "__main__":
    main()
