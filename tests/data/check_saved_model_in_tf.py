"""TensorFlow 2.21 loads a v1 SavedModel written by aioflow's Builder
(tests/test_saved_model_builder.py).

Usage: TF_CPP_MIN_LOG_LEVEL=3 /path/to/tf-venv/bin/python check_saved_model_in_tf.py DIR X_JSON
           [--assets]
Loads DIR with tf.compat.v1.saved_model.loader.load (tag "serve"), runs the
serving_default signature on X and prints one JSON line: {"y": ..., "local": ...}; with
--assets, {"texts": the signature's "texts" output, "assets": the asset paths TF feeds}.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    export_dir, x = sys.argv[1], json.loads(sys.argv[2])
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = meta.signature_def["serving_default"]
        if "--assets" in sys.argv:
            from tensorflow.python.saved_model import loader_impl

            texts = sess.run(sig.outputs["texts"].name, {sig.inputs["x"].name: x})
            assets = loader_impl.get_asset_tensors(export_dir, meta)
            print(json.dumps({"texts": texts.decode(),
                              "assets": sorted(p.decode() if isinstance(p, bytes) else p
                                               for p in assets.values())}))
            return
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
        local = sess.run("counter:0")
    print(json.dumps({"y": y.tolist(), "local": int(local)}))


if __name__ == "__main__":
    main()
