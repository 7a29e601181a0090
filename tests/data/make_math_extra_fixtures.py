"""Writes tests/data/math_extra_cases.{json,npz}: TensorFlow 2.21's CPU results for the
einsum/linalg, segment, special-math and extra array kernels, case by case.

Each case runs one raw op eagerly (`tf.raw_ops.<Op>`: the kernel itself, no shape function
in the way) with oneDNN off (TF_ENABLE_ONEDNN_OPTS=0: TF's reference CPU kernels) and records
its outputs, or its error class and message (without the eager wrapper's
"{{function_node ...}}" prefix and " [Op:...]" suffix). Run from the project root with a
TensorFlow 2.21 environment (see tests/data/README.md):

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_math_extra_fixtures.py

- `math_extra_cases.json`: [{id, op, attrs, n_inputs (a list for a list input), outcome:
  "ok" | "error", error_class, message, n_outputs}]; attrs as JSON, a dtype written
  {"dtype": name}.
- `math_extra_cases.npz`: `in:<id>:<i>` inputs (`in:<id>:<i>:<j>` for list inputs) and
  `out:<id>:<i>` outputs; strings as NumPy bytes arrays.
"""

from __future__ import annotations

import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from math_extra_cases import CASES  # noqa: E402


def _stored(value) -> np.ndarray:
    """An array as the .npz holds it: object (string) arrays as NumPy bytes arrays."""
    value = np.asarray(value)
    if value.dtype == object:
        return np.array(value.tolist(), dtype=bytes).reshape(value.shape)
    return value


def main():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    def attr_value(v):
        if isinstance(v, dict) and "dtype" in v:
            return tf.as_dtype(v["dtype"])
        return v

    records, arrays = [], {}
    for case_id, op, inputs, attrs in CASES:
        op_def = op_def_registry.get(op)
        kwargs, n_inputs = {}, []
        for i, (arg, value) in enumerate(zip(op_def.input_arg, inputs, strict=False)):
            if isinstance(value, list):
                kwargs[arg.name] = [tf.constant(v) for v in value]
                n_inputs.append(len(value))
                for j, v in enumerate(value):
                    arrays[f"in:{case_id}:{i}:{j}"] = _stored(v)
            else:
                kwargs[arg.name] = tf.constant(value)
                n_inputs.append(None)
                arrays[f"in:{case_id}:{i}"] = _stored(value)
        record = {"id": case_id, "op": op, "attrs": attrs, "n_inputs": n_inputs}
        try:
            out = getattr(tf.raw_ops, op)(**kwargs, **{k: attr_value(v) for k, v in attrs.items()})
        except Exception as e:  # noqa: BLE001
            message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(e))
            message = re.sub(r" \[Op:\w+\]( name: \S*)?$", "", message)
            record.update(outcome="error", error_class=type(e).__name__, message=message)
        else:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            record.update(outcome="ok", n_outputs=len(outs))
            for i, o in enumerate(outs):
                arrays[f"out:{case_id}:{i}"] = _stored(o.numpy())
        records.append(record)
    with open(os.path.join(HERE, "math_extra_cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    np.savez_compressed(os.path.join(HERE, "math_extra_cases.npz"), **arrays)
    print(f"{len(records)} cases, {sum(r['outcome'] == 'error' for r in records)} errors")


if __name__ == "__main__":
    main()
