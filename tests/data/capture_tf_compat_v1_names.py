"""Capture TF 2.21's `tf.compat.v1` public names, module by module (recursively through
its submodules), into docs/data/tf_compat_v1_names.json: {"tf.nn": [names], ...}.
docs/gen_api_coverage.py compares aioflow.compat.v1 against it.

    /work/peers-venv/bin/python tests/data/capture_tf_compat_v1_names.py

Only the API modules TF generates are walked (not Python's own modules that one of them
re-exports, as tf.test.mock). Left out: `tf.compat` (the same tree again), `tf.raw_ops`
(one name per op kernel: docs/op_coverage.md covers ops) and `tf.keras` (a separate
library); `tf.layers` and `tf.nn.rnn_cell` load Keras, which is not installed with
tensorflow-cpu 2.21, and are left out with a note when they fail to load.
"""

import json
import pathlib
import types

import tensorflow as tf

SKIP = {"compat", "raw_ops", "keras"}
OUT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "data" / "tf_compat_v1_names.json"


def _walk(module, path: str, out: dict, seen: set) -> None:
    names = []
    try:
        listed = dir(module)
    except Exception as e:  # noqa: BLE001 - a lazy module whose library is not installed
        print(f"left out {path}: {type(e).__name__}: {e}")
        return
    for name in sorted(listed):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except Exception:  # noqa: BLE001 - a lazily loaded name that fails to load
            continue
        if isinstance(value, types.ModuleType):
            # Only TF's generated API modules: not a library one re-exports (tf.test.mock)
            api = getattr(value, "__name__", "").startswith("tensorflow._api.")
            if name in SKIP or id(value) in seen or not api:
                continue
            seen.add(id(value))
            _walk(value, f"{path}.{name}", out, seen)
            continue
        names.append(name)
    out[path] = names


def main():
    out: dict = {}
    _walk(tf.compat.v1, "tf", out, {id(tf.compat.v1)})
    out = {k: out[k] for k in sorted(out)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"tensorflow": tf.__version__, "modules": out}, indent=1) + "\n")
    print(f"wrote {sum(len(v) for v in out.values())} names in {len(out)} modules to {OUT}")


if __name__ == "__main__":
    main()
