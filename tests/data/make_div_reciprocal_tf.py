"""Make tests/data/div_reciprocal_tf.npz: what TF 2.21's default session computes for
divisions by constants (grappler rewrites x / c as x * (1 / c)), and what it computes
with the meta optimizer off (true division), for the graph `program` builds.

Run from the project root with a throwaway TensorFlow install (never a dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_div_reciprocal_tf.py

`program` takes the TF-1-like module (tf.compat.v1 here, aioflow in
tests/test_div_to_reciprocal_mul.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def feeds() -> dict:
    rng = np.random.default_rng(5)
    x = np.concatenate([np.arange(-3, 256), rng.normal(0, 100, 500), [0.0, -0.0]])
    return {"x32": x.astype(np.float32), "x64": x.astype(np.float64),
            "x16": x.astype(np.float16), "xi": np.arange(-20, 20, dtype=np.int32)}


def program(tf):
    """Divisions by Consts of every kind the rewrite sees, and some it must leave."""
    x32 = tf.placeholder(tf.float32, [None], name="x32")
    x64 = tf.placeholder(tf.float64, [None], name="x64")
    x16 = tf.placeholder(tf.float16, [None], name="x16")
    xi = tf.placeholder(tf.int32, [None], name="xi")
    out = {
        "by_255": x32 / 255.0,
        "by_127_5": x32 / 127.5 - 1.0,
        "by_3_f64": x64 / 3.0,
        "by_3_f16": x16 / tf.constant(3.0, tf.float16),
        "div_op": tf.div(x32, tf.constant(7.0)),
        "vector": tf.reshape(x32[:258], [-1, 3]) / tf.constant([3.0, 7.0, 0.1]),
        "by_zero": x32 / 0.0,
        "int_div": tf.div(xi, tf.constant(3)),
        "realdiv_int_pair": tf.truediv(xi, 3),
        "not_const": x32 / tf.placeholder_with_default(tf.constant(255.0), []),
    }
    # in a while loop's body: the Const lives in the frame
    out["in_loop"] = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v / 3.0),
                                   [tf.constant(0), x32])[1]
    return out


def small_program(tf, extra: int):
    """x / 255 in a graph of 3 + `extra` nodes (grappler skips graphs under 4)."""
    x = tf.placeholder(tf.float32, [None], name="x")
    for k in range(extra):
        tf.constant(float(k), name=f"unused_{k}")
    return x / 255.0


def run_small(v1, x, extra: int, least: int):
    graph = v1.Graph()
    with graph.as_default():
        y = small_program(v1, extra)
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = least
    with v1.Session(graph=graph, config=config) as sess:
        return sess.run(y, {graph.get_tensor_by_name("x:0"): x})


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    graph = v1.Graph()
    with graph.as_default():
        fetches = program(v1)
    values = feeds()
    feed = {graph.get_tensor_by_name(f"{k}:0"): v for k, v in values.items()}
    with v1.Session(graph=graph) as sess:
        default = sess.run(fetches, feed)
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with v1.Session(graph=graph, config=config) as sess:
        plain = sess.run(fetches, feed)
    small = {}
    for extra, least in ((0, 0), (1, 0), (0, -1)):
        small[f"small_{extra}_{least}"] = run_small(v1, values["x32"], extra, least)
    np.savez(HERE / "div_reciprocal_tf.npz", **{f"feed:{k}": v for k, v in values.items()},
             **{f"default:{k}": v for k, v in default.items()},
             **{f"plain:{k}": v for k, v in plain.items()}, **small)
    differ = [k for k in fetches if not np.array_equal(default[k], plain[k], equal_nan=True)]
    print(f"{len(fetches)} fetches; grappler changed: {differ}")


if __name__ == "__main__":
    main()
