"""Make the step-stats and cost-graph fixture: the RunMetadata TF 2.21's DirectSession
returns for a traced run of a small graph with `build_cost_model` on.

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_step_stats_fixture.py

Writes step_stats_tf.pb (the GraphDef), step_stats_tf_md.pb (RunMetadata of the second
run: step_stats at FULL_TRACE and cost_graph with build_cost_model=1) and
step_stats_tf.json (feeds, fetches). Optimizers are off (L0, no grappler), so the nodes
that run are the graph's own (with oneDNN on, TF labels MatMul `_MklMatMul`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NAME = "step_stats_tf"


def build(tf):
    """A Const, a fed input, a new buffer (MatMul), a view (Reshape), a reduction, an
    Identity (aliasing its input)."""
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    c = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="c")
    mm = tf.matmul(x, c, name="mm")
    r = tf.reshape(mm, [4], name="r")
    s = tf.reduce_sum(r, name="s")
    return {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3)}, [tf.identity(s, name="out")]


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        feeds, fetches = build(v1)
    config = v1.ConfigProto()
    config.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.build_cost_model = 1
    with v1.Session(graph=g, config=config) as sess:
        feed = {g.get_tensor_by_name(k): v for k, v in feeds.items()}
        for _ in range(2):
            md = v1.RunMetadata()
            sess.run(fetches, feed, run_metadata=md,
                     options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE))
    (HERE / f"{NAME}.pb").write_bytes(g.as_graph_def().SerializeToString(deterministic=True))
    (HERE / f"{NAME}_md.pb").write_bytes(md.SerializeToString(deterministic=True))
    np.savez(HERE / f"{NAME}.npz", **{f"feed:{k}": v for k, v in feeds.items()})
    (HERE / f"{NAME}.json").write_text(json.dumps({
        "feeds": sorted(feeds), "fetches": [t.name for t in fetches],
        "tensorflow": tf.__version__}, indent=2) + "\n")


if __name__ == "__main__":
    main()
