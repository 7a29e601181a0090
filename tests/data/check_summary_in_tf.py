"""TensorFlow reads the event files aioflow wrote: run with a Python that has TensorFlow
2.21 and a manifest (tests/test_summary.py writes both the files and the manifest):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/check_summary_in_tf.py M

Reads every event with `tf.compat.v1.train.summary_iterator`, parses the graph, meta graph
and run metadata with TF's own protos, and checks the scalar, histogram and text values
against the manifest's. Prints one JSON line: {"ok": ..., "events": n, "problems": [...]}.
"""

from __future__ import annotations

import json
import os
import sys


def main(manifest_path: str) -> int:
    import tensorflow as tf
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2

    manifest = json.load(open(manifest_path))
    expected = manifest["expected"]
    problems: list[str] = []
    (name,) = os.listdir(manifest["logdir"])
    events = list(tf.compat.v1.train.summary_iterator(os.path.join(manifest["logdir"], name)))
    kinds = [e.WhichOneof("what") for e in events]
    if kinds[:3] != ["file_version", "graph_def", "meta_graph_def"]:
        problems.append(f"events start {kinds[:3]}")
    if events[0].file_version != "brain.Event:2":
        problems.append(f"file_version {events[0].file_version!r}")
    for e in events:
        kind = e.WhichOneof("what")
        if kind == "graph_def":
            g = graph_pb2.GraphDef.FromString(e.graph_def)
            if sorted(n.name for n in g.node) != expected["nodes"]:
                problems.append("graph nodes differ")
            with tf.Graph().as_default():
                tf.compat.v1.import_graph_def(g, name="")  # TF imports it as a graph
        elif kind == "meta_graph_def":
            meta_graph_pb2.MetaGraphDef.FromString(e.meta_graph_def)
        elif kind == "tagged_run_metadata":
            meta = config_pb2.RunMetadata.FromString(e.tagged_run_metadata.run_metadata)
            if e.tagged_run_metadata.tag != expected["run_metadata"] or not \
                    meta.step_stats.dev_stats:
                problems.append("run metadata")
        elif kind == "summary":
            step = str(e.step)
            for v in e.summary.value:
                if v.tag == "loss" and abs(v.simple_value - expected["scalars"][step]) > \
                        1e-6 * abs(expected["scalars"][step]):
                    problems.append(f"loss at {step}: {v.simple_value}")
                elif v.tag == "activations":
                    lo, hi, num, total = expected["histograms"][step]
                    h = v.histo
                    if (h.min, h.max, h.num) != (lo, hi, num) or abs(h.sum - total) > 1e-5 \
                            or sum(h.bucket) != num:
                        problems.append(f"histogram at {step}")
                elif v.tag == "note":
                    text = tf.make_ndarray(v.tensor).item().decode()
                    if text != expected["text"][step] or \
                            v.metadata.plugin_data.plugin_name not in ("text", ""):
                        problems.append(f"text at {step}: {text!r}")
    print(json.dumps({"ok": not problems, "events": len(events), "problems": problems}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
