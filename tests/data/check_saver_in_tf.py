"""Check, with real TensorFlow, checkpoints and meta graphs that af.train.Saver wrote.

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/check_saver_in_tf.py MANIFEST

MANIFEST is a JSON file: {"checks": [{"prefix", "meta", "var_list", "expected"}],
"latest": {directory: prefix}}. For a check with "meta", TF imports that meta graph
(tf.compat.v1.train.import_meta_graph) and restores the prefix through the Saver it
returns; without, TF builds make_saver_fixtures.build_graph and a Saver over "var_list"
({checkpoint key: variable name}; all variables when null). Either way every variable
named in "expected" ({variable name: value}) must then hold that value. For each
directory, tf.train.latest_checkpoint must name the prefix. Prints a JSON report on its
last line; exits 1 on any mismatch. Used by tests/test_saver.py when AIOFLOW_TF_PYTHON
names a Python with TensorFlow.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_saver_fixtures import build_graph  # noqa: E402


def _same(got, want) -> bool:
    got = np.asarray(got)
    if got.dtype == object:
        return [x.decode("utf-8") for x in got.reshape(-1)] == list(np.ravel(want))
    return got.shape == np.asarray(want).shape and np.array_equal(got, np.asarray(want))


def run_check(tf, check: dict) -> list[str]:
    """Restore one checkpoint in TF and compare the variables; the mismatches."""
    tf1 = tf.compat.v1
    problems = []
    g = tf.Graph()
    with g.as_default():
        if check.get("meta"):
            saver = tf1.train.import_meta_graph(check["meta"])
            by_name = {v.op.name: v for v in tf1.global_variables()}
        else:
            by_name, _ = build_graph(tf1)
            var_list = check.get("var_list")
            saver = tf1.train.Saver(None if var_list is None else
                                    {k: by_name[v] for k, v in var_list.items()})
        with tf1.Session(graph=g) as sess:
            saver.restore(sess, check["prefix"])
            for name, want in check["expected"].items():
                got = sess.run(by_name[name])
                if not _same(got, want):
                    problems.append(f"{check['prefix']}: {name} = {got!r}, expected {want!r}")
    return problems


def main(manifest_path: str) -> int:
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_resource_variables()
    with open(manifest_path) as f:
        manifest = json.load(f)
    problems, checked = [], 0
    for check in manifest["checks"]:
        try:
            problems += run_check(tf, check)
        except Exception as e:  # noqa: BLE001  (reported)
            problems.append(f"{check['prefix']}: {type(e).__name__}: {e}"[:2000])
        checked += len(check["expected"])
    for directory, prefix in manifest.get("latest", {}).items():
        got = tf.train.latest_checkpoint(directory)
        if got != prefix:
            problems.append(f"latest_checkpoint({directory}) = {got}, expected {prefix}")
    print(json.dumps({"ok": not problems, "problems": problems, "values_checked": checked}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
