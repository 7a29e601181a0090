"""TensorFlow 2.21 loads a v1 SavedModel written by aioflow's Builder
(tests/test_saved_model_builder.py).

Usage: TF_CPP_MIN_LOG_LEVEL=3 /path/to/tf-venv/bin/python check_saved_model_in_tf.py DIR X_JSON
Loads DIR with tf.compat.v1.saved_model.loader.load (tag "serve"), runs the
serving_default signature on X and prints one JSON line: {"y": ..., "local": ...}.
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
        y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: x})
        local = sess.run("counter:0")
    print(json.dumps({"y": y.tolist(), "local": int(local)}))


if __name__ == "__main__":
    main()
