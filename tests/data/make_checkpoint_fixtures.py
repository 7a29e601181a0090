"""V2 checkpoints written by TensorFlow, for tests/test_tensor_bundle.py.

Run from the project root with TensorFlow 2.21 (CPU) installed (never an aioflow
dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_checkpoint_fixtures.py

Writes (deterministic bytes, except the state file's timestamps, which are not stored):

- ckpt_basic/model.{index,data-00000-of-00001}: one SaveV2 of float, double, half,
  bfloat16, int8/16/32/64, uint8, bool, complex64, string tensors, scalars and empty
  tensors (BASIC below).
- ckpt_sharded/model.{index,data-0000{0,1}-of-00002}: two SaveV2 bundles merged with
  MergeV2Checkpoints (delete_old_dirs), as a sharded Saver writes them.
- ckpt_saver/: tf.compat.v1.train.Saver(save_relative_paths=True) saving two variables
  at global steps 1 and 2 (max_to_keep=1: step 1 deleted), with its `checkpoint` file.
- checkpoint_fixtures.json: per bundle, each tensor as TF's reader returns it (dtype
  name, shape, values: floats as float, strings as hex, complex as [re, im]); and the
  SHA-256 of the index and data files TF writes for MANY (many_tensors(): 8,000 tensors,
  so the index has several blocks), which aioflow must reproduce byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def basic_tensors() -> dict:
    """name -> (numpy value, TF dtype name); strings as object arrays of bytes."""
    import ml_dtypes
    rng = np.random.default_rng(11)
    return {
        "dense/kernel": (rng.standard_normal((3, 4)).astype(np.float32), "float32"),
        "dense/bias": (np.array([0.5, -1.25, 3.0, 0.0], np.float32), "float32"),
        "double": (np.array([[1.0 / 3.0, -2.5e300]], np.float64), "float64"),
        "half": (np.array([1.5, -0.099975586, 65504.0], np.float16), "float16"),
        "bf16": (np.array([[1.0, -2.5], [3.140625, 1e-3]], ml_dtypes.bfloat16), "bfloat16"),
        "int8": (np.array([-128, 0, 127], np.int8), "int8"),
        "int16": (np.array([-32768, 7], np.int16), "int16"),
        "int32": (np.arange(-3, 3, dtype=np.int32).reshape(2, 3), "int32"),
        "global_step": (np.int64(123456789012), "int64"),
        "int64_vec": (np.array([-(2 ** 62), 2 ** 40, -1], np.int64), "int64"),
        "uint8": (np.array([0, 200, 255], np.uint8), "uint8"),
        "flags": (np.array([True, False, True]), "bool"),
        "cplx": (np.array([1 + 2j, -0.5 - 1j], np.complex64), "complex64"),
        "scalar_f": (np.float32(2.75), "float32"),
        "words": (np.array([b"hello", b"", "\u00e9t\u00e9".encode(), b"x" * 300,
                            bytes(range(256))], dtype=object), "string"),
        "string_scalar": (np.array(b"only one", dtype=object), "string"),
        "empty_f": (np.zeros((0, 3), np.float32), "float32"),
        "empty_s": (np.array([], dtype=object).reshape(2, 0), "string"),
    }


def many_tensors() -> dict:
    """8,000 small tensors under long, varied names (an index of three blocks)."""
    out = {}
    for i in range(8000):
        name = f"model/layer_{i % 37:02d}/block_{i:05d}/" + hashlib.sha256(
            str(i).encode()).hexdigest()[:40]
        out[name] = (np.array([i, -i], np.int32), "int32")
    return out


def _describe(value: np.ndarray, dtype: str) -> dict:
    """A tensor as JSON: dtype, shape, flat values."""
    value = np.asarray(value)
    flat = value.reshape(-1)
    if dtype == "string":
        values = [bytes(v).hex() for v in flat]
    elif dtype.startswith("complex"):
        values = [[float(v.real), float(v.imag)] for v in flat]
    elif dtype == "bool":
        values = [bool(v) for v in flat]
    elif dtype.startswith(("int", "uint")):
        values = [int(v) for v in flat]
    else:
        values = [float(v) for v in flat.astype(np.float64)]
    return {"dtype": dtype, "shape": list(value.shape), "values": values}


def _save(tf, prefix: str, tensors: dict) -> None:
    names = list(tensors)
    values = [tf.constant(v, dtype=getattr(tf, d)) for v, d in tensors.values()]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=values)


def _read_back(tf, prefix: str) -> dict:
    """Every tensor as TF's checkpoint reader returns it."""
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    return {name: _describe(reader.get_tensor(name), dtypes[name].name)
            for name in sorted(dtypes)}


def _sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main() -> int:
    import tensorflow as tf
    out = {"tensorflow": tf.__version__}
    basic = os.path.join(HERE, "ckpt_basic")
    shutil.rmtree(basic, ignore_errors=True)
    _save(tf, os.path.join(basic, "model"), basic_tensors())
    out["ckpt_basic"] = _read_back(tf, os.path.join(basic, "model"))

    sharded = os.path.join(HERE, "ckpt_sharded")
    shutil.rmtree(sharded, ignore_errors=True)
    tmp = os.path.join(sharded, "model_temp")
    parts = [os.path.join(tmp, "part-00000-of-00002"), os.path.join(tmp, "part-00001-of-00002")]
    os.makedirs(tmp)  # SaveV2 creates the prefix's directory, not its parents
    _save(tf, parts[0], {"a/w": (np.arange(12, dtype=np.float32).reshape(3, 4), "float32"),
                         "z/step": (np.int64(5), "int64")})
    _save(tf, parts[1], {"b/w": (np.array([[1.5, 2.5]], np.float64), "float64"),
                         "m/names": (np.array([b"p", b"qq"], dtype=object), "string")})
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=parts,
                                  destination_prefix=os.path.join(sharded, "model"),
                                  delete_old_dirs=True)
    out["ckpt_sharded"] = _read_back(tf, os.path.join(sharded, "model"))
    out["ckpt_sharded_files"] = sorted(os.listdir(sharded))

    saver_dir = os.path.join(HERE, "ckpt_saver")
    shutil.rmtree(saver_dir, ignore_errors=True)
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.Variable([[1.0, 2.0]], name="v")
        step = tf.compat.v1.Variable(0, dtype=tf.int64, name="global_step")
        bump = [v.assign_add([[1.0, 1.0]]), step.assign_add(1)]
        saver = tf.compat.v1.train.Saver(max_to_keep=1, save_relative_paths=True)
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for s in (1, 2):
                sess.run(bump)
                saver.save(sess, os.path.join(saver_dir, "model.ckpt"), global_step=s,
                           write_meta_graph=False)
    with open(os.path.join(saver_dir, "checkpoint")) as f:
        state = f.read()
    out["ckpt_saver_state_paths"] = [line for line in state.splitlines()
                                     if "timestamp" not in line]
    out["ckpt_saver_latest"] = os.path.relpath(tf.train.latest_checkpoint(saver_dir), HERE)
    out["ckpt_saver"] = _read_back(tf, tf.train.latest_checkpoint(saver_dir))

    many = os.path.join(HERE, "ckpt_many_tmp")
    shutil.rmtree(many, ignore_errors=True)
    _save(tf, os.path.join(many, "model"), many_tensors())
    out["many_sha256"] = {"index": _sha(os.path.join(many, "model.index")),
                          "data": _sha(os.path.join(many, "model.data-00000-of-00001")),
                          "index_bytes": os.path.getsize(os.path.join(many, "model.index"))}
    shutil.rmtree(many)
    with open(os.path.join(HERE, "checkpoint_fixtures.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
