#!/usr/bin/env python
"""Loading a v1 MobileNetV2 SavedModel: aioflow's `af.saved_model.loader.load` against
TensorFlow 2.21's `tf.compat.v1.saved_model.loader.load`.

The SavedModel is made once by TensorFlow (--tf-python): Keras's MobileNetV2 (alpha 1.0,
224x224, random weights after a fixed seed) traced and frozen, then its weight constants
turned back into 262 ref variables (VariableV2, as a TF 1.x model's are) and exported
with `tf.compat.v1.saved_model.Builder` (variables in a sharded V2 checkpoint, 14 MB).

A load is what a service does at startup: a fresh graph and session, the loader (parse
saved_model.pb, import the MetaGraphDef, restore the variables through its Saver, run the
init op), then the first inference on one image (which builds the serving executor). Each
measurement runs in a fresh subprocess of its peer; the peers alternate (ABAB) for --reps
rounds. Per round: the first load in the process ("cold": kernels, pools and caches
start), then the median of --runs further loads in new graphs ("warm"). Both peers'
logits of the first inference are compared (they must agree).

Prints one JSON object: per peer the median over rounds of cold load, cold load + first
run, warm load, warm load + first run (seconds), and the ratios aioflow/TF.
Usage: python benchmarks/saved_model_load.py --tf-python /work/peers-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

INPUT_SHAPE = (1, 224, 224, 3)


def image() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)


def make_saved_model(export_dir: str) -> None:
    """Write the benchmark's SavedModel with TensorFlow (run under --tf-python)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(alpha=1.0, weights=None, input_shape=(224, 224, 3),
                                           classifier_activation=None)
    spec = tf.TensorSpec([None, 224, 224, 3], tf.float32, name="x")
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    frozen_fn = convert_variables_to_constants_v2(fn)
    frozen = frozen_fn.graph.as_graph_def()
    output = frozen_fn.outputs[0].name
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        weights = {}
        for node in frozen.node:  # weight constants become placeholders mapped to variables
            if node.op == "Const" and node.attr["dtype"].type == tf.float32.as_datatype_enum:
                value = tf.make_ndarray(node.attr["value"].tensor)
                if value.size > 1:
                    weights[node.name] = value
                    shape = node.attr["value"].tensor.tensor_shape
                    node.op = "Placeholder"
                    node.attr.clear()
                    node.attr["dtype"].type = tf.float32.as_datatype_enum
                    node.attr["shape"].shape.CopyFrom(shape)
        input_map = {}
        for i, (name, value) in enumerate(weights.items()):
            var = tf1.get_variable(f"weights_{i:03d}", initializer=value, use_resource=False)
            input_map[name + ":0"] = var.value()
        x = tf1.placeholder(tf.float32, [None, 224, 224, 3], name="input")
        input_map["x:0"] = x
        (logits,) = tf.import_graph_def(frozen, input_map=input_map, return_elements=[output],
                                        name="model")
        sig = tf1.saved_model.signature_def_utils.predict_signature_def(
            {"x": x}, {"logits": logits})
        with tf1.Session(graph=g) as sess:
            sess.run(tf1.global_variables_initializer())
            builder = tf1.saved_model.Builder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": sig})
            builder.save()


def child_aioflow(export_dir: str, runs: int) -> dict:
    import asyncio

    import aioflow as af

    x = image()

    async def load_and_run():
        t0 = time.perf_counter()
        sess = af.Session(graph=af.Graph())
        meta = await af.saved_model.loader.load(sess, ["serve"], export_dir)
        t1 = time.perf_counter()
        sig = meta.signature_def["serving_default"]
        logits = await sess.run(sig.outputs["logits"].name, {sig.inputs["x"].name: x})
        t2 = time.perf_counter()
        await sess.close()
        return t1 - t0, t2 - t0, logits

    async def main():
        return [await load_and_run() for _ in range(1 + runs)]

    return _summary(asyncio.run(main()))


def child_tf(export_dir: str, runs: int) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    x = image()

    def load_and_run():
        t0 = time.perf_counter()
        sess = tf.Session(graph=tf.Graph())
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        t1 = time.perf_counter()
        sig = meta.signature_def["serving_default"]
        logits = sess.run(sig.outputs["logits"].name, {sig.inputs["x"].name: x})
        t2 = time.perf_counter()
        sess.close()
        return t1 - t0, t2 - t0, logits

    return _summary([load_and_run() for _ in range(1 + runs)])


def _summary(loads) -> dict:
    (cold, cold_run, logits), warm = loads[0], loads[1:]
    return {"cold_load_s": cold, "cold_load_run_s": cold_run,
            "warm_load_s": statistics.median(w[0] for w in warm),
            "warm_load_run_s": statistics.median(w[1] for w in warm),
            "logits": logits.ravel()[:16].tolist()}


def _measure(python: str, peer: str, export_dir: str, runs: int) -> dict:
    cmd = [python, os.path.abspath(__file__), "--child", peer, "--export-dir", export_dir,
           "--runs", str(runs)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(proc.stdout.strip().splitlines()[-1])


KEYS = ("cold_load_s", "cold_load_run_s", "warm_load_s", "warm_load_run_s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python with tensorflow-cpu (required)")
    parser.add_argument("--reps", type=int, default=3, help="ABAB rounds")
    parser.add_argument("--runs", type=int, default=3, help="warm loads timed per round")
    parser.add_argument("--child", choices=["aioflow", "tf", "make"])
    parser.add_argument("--export-dir")
    args = parser.parse_args()
    if args.child == "make":
        make_saved_model(args.export_dir)
        return 0
    if args.child:
        fn = child_aioflow if args.child == "aioflow" else child_tf
        print(json.dumps(fn(args.export_dir, args.runs)))
        return 0
    if not args.tf_python:
        parser.error("--tf-python is required (TensorFlow makes the SavedModel)")
    with tempfile.TemporaryDirectory(prefix="sm_bench") as tmp:
        export_dir = os.path.join(tmp, "mobilenet_v2")
        subprocess.run([args.tf_python, os.path.abspath(__file__), "--child", "make",
                        "--export-dir", export_dir], check=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        size = sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(export_dir) for f in files)
        rounds: dict[str, list[dict]] = {"aioflow": [], "tf": []}
        for _ in range(args.reps):
            rounds["tf"].append(_measure(args.tf_python, "tf", export_dir, args.runs))
            rounds["aioflow"].append(_measure(sys.executable, "aioflow", export_dir,
                                              args.runs))
    want = np.asarray(rounds["tf"][0]["logits"])
    np.testing.assert_allclose(rounds["aioflow"][0]["logits"], want, rtol=1e-3,
                               atol=1e-3 * np.abs(want).max())
    result: dict = {"benchmark": "saved_model_load", "model": "MobileNetV2 1.0 224, v1",
                    "saved_model_mb": round(size / 2**20, 1), "reps": args.reps,
                    "cpus": os.cpu_count()}
    for peer, runs in rounds.items():
        result[peer] = {k: round(statistics.median(r[k] for r in runs), 4) for k in KEYS}
        result[peer]["rounds_cold_load_s"] = [round(r["cold_load_s"], 4) for r in runs]
    result["ratio_aioflow_over_tf"] = {
        k: round(result["aioflow"][k] / result["tf"][k], 3) for k in KEYS}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
