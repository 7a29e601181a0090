"""Writes tests/data/random_* : TensorFlow 2.21's values of its random ops, for seeds,
shapes and dtypes that exercise Philox's 4-wide blocks, and the GraphDefs (and values) TF's
Python writes for seeded programs. Run from the project root with a TensorFlow 2.21
environment (see tests/data/README.md):

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_random_fixtures.py

- `random_cases.json`: [{id, op, attrs, inputs, runs, outcome: "ok" | "error",
  error_class, message}]: each case is one raw op in a v1 graph fed by placeholders (so
  nothing is folded), run `runs` times in one session (a stateful op's state advances
  from run to run); `inputs` are [dtype name, value] pairs; a dtype attr is written
  {"dtype": name}. Errors keep the message's first line.
- `random_cases.npz`: outputs `out:<id>:<run>:<i>`; bfloat16 values as float32 (exact),
  strings as bytes.
- `random_op_defs.pb`: TF's OpDefs of the random ops (an OpList).
- `random_multinomial.npz`: a Multinomial TF splits across its threads: `logits`, `run0`,
  `run1` and `threads` (TF's intra-op thread count here, which the split depends on).
- `random_builders.npz`: per program of `BUILDERS`, `graph:<name>` (the GraphDef, serialized,
  uint8) and `fetch:<name>:<run>:<i>` (its fetches' values on runs 0 and 1).

This module does not import TensorFlow at import time: the tests import the builders.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ["RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
       "RandomShuffle", "Multinomial", "RandomGamma", "StatelessRandomUniform",
       "StatelessRandomNormal",
       "StatelessTruncatedNormal", "StatelessRandomUniformInt", "StatelessRandomUniformV2",
       "StatelessRandomNormalV2", "StatelessTruncatedNormalV2", "StatelessRandomUniformIntV2",
       "StatelessRandomUniformFullInt", "StatelessRandomUniformFullIntV2",
       "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetKeyCounter",
       "StatelessRandomGetAlg"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
SHAPES = [[], [0], [1], [3], [5], [2, 3, 7], [1001]]
BIG = [1001]


# ---------------------------------------------------------------------------------------------
# Builder programs: `tf` is tf.compat.v1 or aioflow; each returns the tensors to fetch.
# ---------------------------------------------------------------------------------------------

def builder_uniform(tf):
    tf.set_random_seed(7)
    return [tf.random_uniform([2, 3]),
            tf.random_uniform([5], minval=-1.0, maxval=3.0, seed=11, name="ranged"),
            tf.random_uniform([4], maxval=5.0, dtype=tf.float64),
            tf.random_uniform([3, 3], minval=-10, maxval=10, dtype=tf.int32, seed=3),
            tf.random_uniform([6], minval=0, maxval=2**40, dtype=tf.int64),
            tf.random.uniform([7], dtype=tf.float16)]


def builder_normal(tf):
    tf.set_random_seed(1234)
    return [tf.random_normal([3, 5]),
            tf.random_normal([9], mean=2.0, stddev=0.5, seed=1, dtype=tf.float64),
            tf.truncated_normal([11]),
            tf.truncated_normal([2, 2], mean=-1.0, stddev=3.0, dtype=tf.bfloat16),
            tf.random.normal([6], seed=5), tf.random.truncated_normal([5], seed=5)]


def builder_op_seeds_only(tf):
    return [tf.random_uniform([4], seed=1), tf.random_normal([4], seed=0),
            tf.random_shuffle(tf.constant(np.arange(10, dtype=np.int32)), seed=2)]


def builder_shuffle_multinomial(tf):
    tf.set_random_seed(99)
    logits = tf.constant(np.log([[0.1, 0.2, 0.3, 0.4], [0.5, 0.25, 0.125, 0.125]]),
                         dtype=tf.float32)
    return [tf.random_shuffle(tf.constant(np.arange(12).reshape(6, 2).astype(np.float32))),
            tf.random.shuffle(tf.constant(np.arange(9, dtype=np.int64)), seed=4),
            tf.multinomial(logits, 8),
            tf.random.categorical(logits, 5, dtype=tf.int32, seed=2)]


def builder_gamma(tf):
    tf.set_random_seed(5)
    return [tf.random_gamma([4], alpha=[0.5, 2.0], beta=2.0, seed=3),
            tf.random.gamma([2, 3], alpha=1.5, dtype=tf.float64),
            tf.random_gamma([3], alpha=tf.constant([[1.0], [0.3]]))]


def builder_stateless(tf):
    seed = tf.constant([1, 2], dtype=tf.int64)
    return [tf.random.stateless_uniform([3, 4], seed=seed),
            tf.random.stateless_uniform([5], seed=[7, 8], minval=-2.0, maxval=2.0,
                                        dtype=tf.float64),
            tf.random.stateless_uniform([6], seed=[3, 4], minval=0, maxval=100,
                                        dtype=tf.int32),
            tf.random.stateless_uniform([4], seed=[3, 4], minval=None, maxval=None,
                                        dtype=tf.uint32),
            tf.random.stateless_normal([7], seed=[5, 6], mean=1.0, stddev=2.0),
            tf.random.stateless_truncated_normal([2, 3], seed=[5, 6], dtype=tf.float16),
            tf.random.stateless_uniform([5], seed=[9, 10], alg="philox"),
            tf.random.stateless_normal([3], seed=[9, 10], alg="philox")]


BUILDERS = ["builder_uniform", "builder_normal", "builder_op_seeds_only",
            "builder_shuffle_multinomial", "builder_gamma", "builder_stateless"]


# ---------------------------------------------------------------------------------------------
# Raw-op cases.
# ---------------------------------------------------------------------------------------------

def _cases() -> list[dict]:
    cases = []

    def add(op, inputs, runs=1, **attrs):
        cases.append({"id": f"c{len(cases)}", "op": op, "inputs": inputs, "runs": runs,
                      "attrs": attrs})

    seeds = [(1, 2), (0, 7), (87654321, 0), (-1, 123456789012)]
    for op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
        for dt in FLOATS:
            for shape in SHAPES:
                if shape == BIG and dt in ("float16", "bfloat16"):
                    continue
                for seed, seed2 in (seeds if shape == [5] else seeds[:1]):
                    add(op, [["int32", shape]], runs=2, dtype={"dtype": dt}, seed=seed,
                        seed2=seed2)
        add(op, [["int64", [3, 2]]], runs=2, dtype={"dtype": "float32"}, seed=5, seed2=6)
    for dt, lo, hi in (("int32", -5, 1000), ("int32", 0, 1), ("int32", -2**31, 2**31 - 1),
                       ("int64", -5, 10**12), ("int64", -2**63, 2**63 - 1),
                       ("int64", 3, 4)):
        for shape in ([0], [1], [5], [2, 9]):
            add("RandomUniformInt", [["int32", shape], [dt, lo], [dt, hi]], runs=2, seed=3,
                seed2=4)
    add("RandomUniformInt", [["int32", [3]], ["int32", 5], ["int32", 5]], seed=1)
    add("RandomUniformInt", [["int32", [0]], ["int32", 5], ["int32", 5]], seed=1)
    add("RandomUniformInt", [["int32", [3]], ["int32", [1]], ["int32", 5]], seed=1)
    add("RandomUniformInt", [["int32", [3]], ["int32", 1], ["int32", [5, 6]]], seed=1)
    add("RandomUniform", [["int32", [2, -1]]], dtype={"dtype": "float32"}, seed=1)
    add("RandomUniform", [["int32", [[2]]]], dtype={"dtype": "float32"}, seed=1)
    for shape, dt in (([10], "int32"), ([7, 3], "float32"), ([1], "int32"), ([0], "int32"),
                      ([5], "string"), ([1, 4], "float64"), ([301], "int64")):
        n = int(np.prod(shape))
        value = (np.arange(n).reshape(shape).tolist() if dt != "string"
                 else [f"s{i}" for i in range(n)])
        add("RandomShuffle", [[dt, value]], runs=2, seed=5, seed2=9)
    add("RandomShuffle", [["int32", 4]], seed=5)
    logits = np.log([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [1, 1, 1, 1]]).tolist()
    for num, dt, out in ((8, "float32", "int64"), (1, "float64", "int32"),
                         (0, "float32", "int64"), (13, "float16", "int64")):
        add("Multinomial", [[dt, logits], ["int32", num]], runs=2, seed=2, seed2=3,
            output_dtype={"dtype": out})
    add("Multinomial", [["float32", [[0.0, float("-inf"), 1.0]]], ["int32", 6]], runs=2,
        seed=1, seed2=1)
    add("Multinomial", [["float32", [0.0, 1.0]], ["int32", 2]], seed=1)
    add("Multinomial", [["float32", [[0.0, 1.0]]], ["int32", -1]], seed=1)
    alphas = [0.5, 1.0, 2.5, 0.05, 7.0, 1e-3, 30.0]
    for dt in ("float16", "float32", "float64"):
        for shape in ([0], [1], [3], [2, 5]):
            add("RandomGamma", [["int32", shape], [dt, alphas]], runs=2, seed=6, seed2=1)
        add("RandomGamma", [["int64", [4]], [dt, [[0.25], [3.0]]]], runs=2, seed=2, seed2=9)
    add("RandomGamma", [["int32", [3]], ["float32", []]], seed=1)
    add("RandomGamma", [["int32", [0]], ["float32", []]], seed=1)
    add("RandomGamma", [["int32", [3]], ["float32", [0.0, -0.5, -1.0]]], seed=1)
    for op in ("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"):
        for dt in FLOATS:
            for shape in SHAPES:
                add(op, [["int32", shape], ["int64", [1, 2]]], dtype={"dtype": dt})
        add(op, [["int64", [6]], ["int32", [-3, 2**31 - 1]]], dtype={"dtype": "float32"})
        add(op, [["int32", [3]], ["int64", [1, 2, 3]]], dtype={"dtype": "float32"})
    for dt, lo, hi in (("int32", -5, 1000), ("int64", -5, 10**12), ("int32", 4, 4)):
        for shape in ([0], [7]):
            add("StatelessRandomUniformInt", [["int32", shape], ["int64", [4, 5]], [dt, lo],
                                              [dt, hi]])
    for dt in ("int32", "int64", "uint32", "uint64"):
        add("StatelessRandomUniformFullInt", [["int32", [7]], ["int64", [4, 5]]],
            dtype={"dtype": dt})
    key, counter = [["uint64", [123456789]], ["uint64", [5, 2**63 + 7]]]
    for op in ("StatelessRandomUniformV2", "StatelessRandomNormalV2",
               "StatelessTruncatedNormalV2"):
        for dt in FLOATS:
            for alg in (1, 3):
                add(op, [["int32", [9]], key, counter, ["int32", alg]], dtype={"dtype": dt})
        add(op, [["int32", [9]], key, counter, ["int32", 2]], dtype={"dtype": "float32"})
        add(op, [["int32", [9]], key, counter, ["int32", 4]], dtype={"dtype": "float32"})
        add(op, [["int32", [9]], ["uint64", [1, 2]], counter, ["int32", 1]],
            dtype={"dtype": "float32"})
        # (A one-word counter passes TF's check for Philox but TF then reads a second word
        # past its end: not a case with defined values.)
        add(op, [["int32", [9]], key, ["uint64", []], ["int32", 1]],
            dtype={"dtype": "float32"})
    for dt, lo, hi in (("int32", -5, 1000), ("int64", -5, 10**12), ("uint32", 3, 2**32 - 1),
                       ("uint64", 0, 2**64 - 1)):
        add("StatelessRandomUniformIntV2", [["int32", [9]], key, counter, ["int32", 1],
                                            [dt, lo], [dt, hi]])
    for dt in ("int32", "int64", "uint32", "uint64"):
        add("StatelessRandomUniformFullIntV2", [["int32", [9]], key, counter, ["int32", 3]],
            dtype={"dtype": dt})
    for seed in ([1, 2], [-7, 2**40], [0, 0]):
        add("StatelessRandomGetKeyCounterAlg", [["int64", seed]])
        add("StatelessRandomGetKeyCounter", [["int32", [s % 2**31 for s in seed]]])
    add("StatelessRandomGetAlg", [])
    return cases


def _run_case(tf, case) -> tuple[list, dict]:
    """The case's outputs, run by run, or its error."""
    g = tf.Graph()
    with g.as_default():
        feeds, args = {}, []
        for i, (dt, value) in enumerate(case["inputs"]):
            array = np.array(value, dtype=object if dt == "string" else dt)
            ph = tf.compat.v1.placeholder(tf.as_dtype(dt), shape=None, name=f"in{i}")
            feeds[ph] = array
            args.append(ph)
        attrs = {k: (tf.as_dtype(v["dtype"]) if isinstance(v, dict) else v)
                 for k, v in case["attrs"].items()}
        op_def = tf.raw_ops.__dict__[case["op"]]
        names = [a for a in _input_names(case["op"])]
        try:
            out = op_def(**dict(zip(names, args, strict=True)), **attrs)
        except (ValueError, TypeError) as e:  # a shape function's error
            return None, {"error_class": "ValueError", "message": str(e).split("\n")[0]}
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        runs = []
        with tf.compat.v1.Session(graph=g) as sess:
            for _ in range(case["runs"]):
                try:
                    runs.append(sess.run(outs, feed_dict=feeds))
                except tf.errors.OpError as e:
                    return None, {"error_class": type(e).__name__,
                                  "message": _kernel_message(e.message)}
        return runs, {}


def _kernel_message(text: str) -> str:
    """The kernel's own message inside a v1 Session's error text."""
    match = re.search(r"\nNode: '[^']*'\n(.*?)(\n\t \[\[|$)", text, re.S)
    line = (match.group(1) if match else text).split("\n")[0]
    # TF lists a missing kernel's attrs in no fixed order: kept sorted, for stable files.
    head, sep, attrs = line.partition(" with these attrs: [")
    if sep:
        line = head + sep + ", ".join(sorted(attrs.rstrip("]").split(", "))) + "]"
    return line


def _input_names(op):
    from tensorflow.python.framework import op_def_registry
    return [a.name for a in op_def_registry.get(op).input_arg]


def _store(value) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype.name == "bfloat16":
        return value.astype(np.float32)
    if value.dtype == object:  # strings, as fixed-width bytes (no pickles)
        return value.astype(np.bytes_)
    return value


def write_cases(tf):
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    arrays, table = {}, []
    for case in _cases():
        runs, error = _run_case(tf, case)
        entry = dict(case)
        if error:
            entry.update(outcome="error", **error)
        else:
            entry["outcome"] = "ok"
            for r, outs in enumerate(runs):
                for i, value in enumerate(outs):
                    arrays[f"out:{case['id']}:{r}:{i}"] = _store(value)
        table.append(entry)
    with open(os.path.join(HERE, "random_cases.json"), "w") as f:
        json.dump(table, f, indent=0)
    np.savez_compressed(os.path.join(HERE, "random_cases.npz"), **arrays)
    ops = op_def_pb2.OpList()
    for name in OPS:
        ops.op.add().CopyFrom(op_def_registry.get(name))
    with open(os.path.join(HERE, "random_op_defs.pb"), "wb") as f:
        f.write(ops.SerializeToString(deterministic=True))


def write_builders(tf):
    v1 = tf.compat.v1
    arrays = {}
    for name in BUILDERS:
        g = tf.Graph()
        with g.as_default():
            fetches = globals()[name](v1)
            with v1.Session(graph=g) as sess:
                for r in range(2):
                    for i, value in enumerate(sess.run(fetches)):
                        arrays[f"fetch:{name}:{r}:{i}"] = _store(value)
        data = g.as_graph_def().SerializeToString(deterministic=True)
        arrays[f"graph:{name}"] = np.frombuffer(data, dtype=np.uint8)
    np.savez_compressed(os.path.join(HERE, "random_builders.npz"), **arrays)


def write_sharded_multinomial(tf):
    """A Multinomial large enough for TF to split its rows across its intra-op threads (the
    values depend on their number, recorded as `threads`)."""
    logits = np.random.default_rng(7).normal(size=(100, 8)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        out = tf.raw_ops.Multinomial(logits=logits, num_samples=30, seed=12, seed2=34,
                                     output_dtype=tf.int32)
        with tf.compat.v1.Session(graph=g) as sess:
            runs = [sess.run(out) for _ in range(2)]
    np.savez_compressed(os.path.join(HERE, "random_multinomial.npz"), logits=logits,
                        run0=runs[0], run1=runs[1],
                        threads=np.int32(len(os.sched_getaffinity(0))))


def main():
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    write_cases(tf)
    write_builders(tf)
    write_sharded_multinomial(tf)


if __name__ == "__main__":
    main()
