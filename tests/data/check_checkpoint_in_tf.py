"""Check, with real TensorFlow, checkpoints that aioflow wrote.

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/check_checkpoint_in_tf.py MANIFEST

MANIFEST is a JSON file: {"checkpoints": {prefix: {name: {"dtype", "shape", "values"}}},
"latest": {directory: expected prefix}} (values as make_checkpoint_fixtures._describe
writes them). For each prefix, TensorFlow reads every tensor twice, through
tf.train.load_checkpoint (py_checkpoint_reader) and through the RestoreV2 op, and both
must equal the manifest (same dtype, shape and values; NaN equal to NaN), and the
bundle must hold no other tensor; for each directory, tf.train.latest_checkpoint must
name the expected prefix. Prints a JSON report; exits 1 on any mismatch. Used by
tests/test_tensor_bundle.py when AIOFLOW_TF_PYTHON names a Python with TensorFlow.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_checkpoint_fixtures import _describe  # noqa: E402


def _same(got: dict, want: dict) -> bool:
    if got["dtype"] != want["dtype"] or got["shape"] != want["shape"]:
        return False
    a, b = got["values"], want["values"]
    if got["dtype"] in ("float16", "bfloat16", "float32", "float64"):
        return len(a) == len(b) and all(x == y or (x != x and y != y)
                                        for x, y in zip(a, b, strict=True))
    return a == b


def check_prefix(tf, prefix: str, expected: dict) -> list[str]:
    """Mismatches between TF's view of one bundle and the manifest."""
    problems = []
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    if sorted(dtypes) != sorted(expected):
        problems.append(f"{prefix}: names {sorted(dtypes)} != {sorted(expected)}")
    names = sorted(set(dtypes) & set(expected))
    for name in names:
        got = _describe(reader.get_tensor(name), dtypes[name].name)
        if not _same(got, expected[name]):
            problems.append(f"{prefix}:{name}: reader gave {got}, expected {expected[name]}")
    if names:
        restored = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=names,
                                        shape_and_slices=[""] * len(names),
                                        dtypes=[dtypes[n] for n in names])
        for name, value in zip(names, restored, strict=True):
            got = _describe(value.numpy(), dtypes[name].name)
            if not _same(got, expected[name]):
                problems.append(f"{prefix}:{name}: RestoreV2 gave {got}")
    return problems


def main(argv: list[str]) -> int:
    import tensorflow as tf
    with open(argv[1]) as f:
        manifest = json.load(f)
    problems, checked = [], 0
    for prefix, expected in manifest.get("checkpoints", {}).items():
        problems += check_prefix(tf, prefix, expected)
        checked += len(expected)
    for directory, prefix in manifest.get("latest", {}).items():
        latest = tf.train.latest_checkpoint(directory)
        if latest != prefix:
            problems.append(f"latest_checkpoint({directory}) = {latest}, expected {prefix}")
    print(json.dumps({"tensorflow": tf.__version__, "tensors_checked": checked,
                      "ok": not problems, "problems": problems}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
