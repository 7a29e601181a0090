"""Writes input_pipelines_tf.json: the GraphDefs TF 2.21's TF 1 input helpers
(tf.compat.v1.train.batch, shuffle_batch, limit_epochs, input_producer,
string_input_producer, range_input_producer, slice_input_producer, batch_join,
shuffle_batch_join and the maybe_* forms) build, and, for the programs whose values do
not depend on thread timing, what a v1 session fetches from the pipeline run by its queue
runners, step after step, until OutOfRangeError.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_input_fixtures_tf.py

Each ``program_*`` takes the TF-1-like module (``tf.compat.v1`` here, ``aioflow`` in
tests/test_input_pipelines.py) and returns the list of tensors a step fetches, or None
(graph only). Resource variables are off, as in TF 1 (aioflow's af.Variable is a ref
variable unless use_resource): limit_epochs' counter is a VariableV2 counted by CountUpTo;
so is control flow v2 (maybe_batch's cond is TF 1's Switch / Merge, as af.cond builds).
A run: initialize the global and local variables, start the queue runners
with a Coordinator, fetch until OutOfRangeError (at most MAX_STEPS). This module does not
import TensorFlow at import time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MAX_STEPS = 40


def _as_list(out):
    """A helper's result as a list (TF returns one tensor when there is one component)."""
    return list(out) if isinstance(out, (list, tuple)) else [out]


def program_batch_in_order(tf):
    """batch of enqueue_many rows (one epoch), num_threads=1: rows in order, a smaller
    final batch."""
    rows = tf.train.limit_epochs(tf.constant(np.arange(20).reshape(10, 2)), num_epochs=1)
    out = tf.train.batch([rows], batch_size=3, enqueue_many=True,
                         allow_smaller_final_batch=True)
    return _as_list(out)


def program_batch_full_batches(tf):
    """batch without allow_smaller_final_batch: the remainder is never dequeued."""
    rows = tf.train.limit_epochs(tf.constant(np.arange(7, dtype=np.float32)), num_epochs=2)
    out = tf.train.batch([rows], batch_size=4, enqueue_many=True, capacity=5)
    return _as_list(out)


def program_batch_dict_threads(tf):
    """A dict of inputs (dict out), num_threads=3, explicit shapes, a name."""
    x = tf.placeholder(tf.float32, [None], name="x")
    out = tf.train.batch({"b": tf.constant("s"), "a": x}, batch_size=2, num_threads=3,
                         capacity=10, shapes=[[4], []], name="my_batch")
    del out
    return None


def program_batch_dynamic_pad(tf):
    """dynamic_pad: elements of growing length (range(i) for i of a range producer),
    padded with zeros to the longest of each batch."""
    q = tf.train.range_input_producer(5, num_epochs=1, shuffle=False)
    i = q.dequeue()
    seq = tf.range(i)
    out = tf.train.batch([seq, i], batch_size=2, dynamic_pad=True,
                         allow_smaller_final_batch=True)
    return _as_list(out)


def program_shuffle_batch_seeded(tf):
    """shuffle_batch of one epoch of rows with an op seed: TF's order."""
    rows = tf.train.limit_epochs(tf.constant(np.arange(12, dtype=np.int64)), num_epochs=1)
    out = tf.train.shuffle_batch([rows], batch_size=4, capacity=20, min_after_dequeue=2,
                                 seed=5, enqueue_many=True, allow_smaller_final_batch=True)
    return _as_list(out)


def program_shuffle_batch_threads(tf):
    """shuffle_batch of single elements, two threads, a graph seed, shapes given."""
    tf.set_random_seed(3)
    x = tf.placeholder(tf.int32, name="x")
    out = tf.train.shuffle_batch([x, tf.constant([1.0, 2.0])], batch_size=5, capacity=30,
                                 min_after_dequeue=10, num_threads=2, shapes=[[], [2]])
    del out
    return None


def program_limit_epochs(tf):
    """limit_epochs of a constant: two fetches, then OutOfRangeError."""
    out = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=2, name="twice")
    return [out]


def program_input_producer(tf):
    """input_producer of a matrix's rows, shuffled with a seed, two epochs, a summary."""
    q = tf.train.input_producer(tf.constant(np.arange(8).reshape(4, 2)), num_epochs=2,
                                seed=9, capacity=6, summary_name="rows")
    return [q.dequeue()]


def program_string_input_producer(tf):
    """string_input_producer over file names: two epochs, shuffled with a seed."""
    q = tf.train.string_input_producer(["a.txt", "b.txt", "c.txt"], num_epochs=2,
                                       seed=4, capacity=8)
    return [q.dequeue()]


def program_string_input_producer_plain(tf):
    """string_input_producer without shuffling or epochs (endless), a name."""
    q = tf.train.string_input_producer(tf.constant(["x", "y"]), shuffle=False, name="files")
    del q
    return None


def program_range_input_producer(tf):
    """range_input_producer, shuffled with a seed, one epoch."""
    q = tf.train.range_input_producer(6, num_epochs=1, seed=2)
    return [q.dequeue()]


def program_slice_input_producer(tf):
    """slice_input_producer of two tensors, in order, one epoch."""
    a, b = tf.train.slice_input_producer(
        [tf.constant([1, 2, 3]), tf.constant([[1.0, 1.5], [2.0, 2.5], [3.0, 3.5]])],
        num_epochs=1, shuffle=False)
    return [a, b]


def program_batch_join(tf):
    """batch_join of two readers' tuples, dynamic_pad off, smaller final batch."""
    x = tf.placeholder(tf.int32, [], name="x")
    y = tf.placeholder(tf.int32, [], name="y")
    out = tf.train.batch_join([[x, tf.constant("p")], [y, tf.constant("q")]],
                              batch_size=3, allow_smaller_final_batch=True)
    del out
    return None


def program_shuffle_batch_join(tf):
    """shuffle_batch_join of two dicts, a seed."""
    x = tf.placeholder(tf.int32, [2], name="x")
    y = tf.placeholder(tf.int32, [2], name="y")
    out = tf.train.shuffle_batch_join([{"v": x}, {"v": y}], batch_size=3, capacity=12,
                                      min_after_dequeue=4, seed=8)
    del out
    return None


def program_maybe_batch_vector(tf):
    """maybe_batch with a vector keep_input and enqueue_many: DynamicPartition picks the
    rows kept."""
    rows = tf.train.limit_epochs(tf.constant(np.arange(6)), num_epochs=1)
    keep = tf.constant([True, False, True, True, False, True])
    out = tf.train.maybe_batch([rows], keep, batch_size=2, enqueue_many=True,
                               allow_smaller_final_batch=True)
    return _as_list(out)


def program_maybe_batch_scalar(tf):
    """maybe_batch with a scalar keep_input fed at run time: the enqueue under a cond
    (Switch, the enqueue in the true branch, a NoOp in the false one, Merge)."""
    keep = tf.placeholder(tf.bool, [], name="keep")
    x = tf.placeholder(tf.float32, [3], name="x")
    out = tf.train.maybe_batch([x], keep, batch_size=4, num_threads=2, capacity=16)
    del out
    return None


def program_string_input_producer_graph_seed(tf):
    """string_input_producer with a graph seed only (the op seed from the op count):
    three epochs in TF's order."""
    tf.set_random_seed(7)
    q = tf.train.string_input_producer(["f0", "f1", "f2", "f3"], num_epochs=3)
    return [q.dequeue()]


def program_slice_then_shuffle_batch_names(tf):
    """slice_input_producer feeding batch with names given, dynamic_pad, a shared name."""
    a, b = tf.train.slice_input_producer([tf.constant([[1, 2], [3, 4]]), tf.constant([5, 6])],
                                         shuffle=False)
    out = tf.train.batch({"a": a, "b": b}, batch_size=2, dynamic_pad=True,
                         shared_name="shared_batch", name="named")
    del out
    return None


def program_maybe_shuffle_batch_vector(tf):
    """maybe_shuffle_batch of one epoch of rows, a vector keep_input, an op seed: the rows
    kept, in TF's order."""
    rows = tf.train.limit_epochs(tf.constant(np.arange(10) * 10), num_epochs=1)
    keep = tf.constant([True, True, False, True, True, True, False, True, True, True])
    out = tf.train.maybe_shuffle_batch([rows], batch_size=3, capacity=16, min_after_dequeue=2,
                                       keep_input=keep, seed=6, enqueue_many=True,
                                       allow_smaller_final_batch=True)
    return _as_list(out)


def program_maybe_batch_join_scalar(tf):
    """maybe_batch_join of two readers with a scalar keep_input (a cond per enqueue)."""
    keep = tf.placeholder(tf.bool, [], name="keep")
    out = tf.train.maybe_batch_join([[tf.constant(1)], [tf.constant(2)]], keep,
                                    batch_size=2)
    del out
    return None


def program_maybe_shuffle_batch_join(tf):
    """maybe_shuffle_batch_join with keep_input known at construction (no cond)."""
    out = tf.train.maybe_shuffle_batch_join([[tf.constant([1.0])], [tf.constant([2.0])]],
                                            batch_size=2, capacity=8, min_after_dequeue=1,
                                            keep_input=True, seed=3)
    del out
    return None


def program_match_filenames_once(tf):
    """match_filenames_once of a glob (a local variable of unknown shape) feeding
    string_input_producer."""
    files = tf.train.match_filenames_once("logs/*.txt")
    q = tf.train.string_input_producer(files, shuffle=False, num_epochs=1)
    del q
    return None


PROGRAMS = {name[len("program_"):]: fn for name, fn in globals().items()
            if name.startswith("program_")}


def plain(value):
    """A fetched value as JSON: {"dtype", "shape", "value"} (bytes as latin-1 text)."""
    arr = np.asarray(value)
    flat = arr.ravel().tolist()
    if arr.dtype == object or arr.dtype.kind in "SU":
        flat = [v.decode("latin-1") if isinstance(v, bytes) else v for v in flat]
        dtype = "string"
    else:
        dtype = arr.dtype.name
    return {"dtype": dtype, "shape": list(arr.shape), "value": flat}


def record(tf, fn, errors_module):
    """Build `fn`'s graph in a fresh graph; run the pipeline when it has fetches."""
    with tf.Graph().as_default() as g:
        fetches = fn(tf)
        graph_def = g.as_graph_def()
        out = {"graph_def": graph_def.SerializeToString().hex(),
               "queue_runners": [[qr.queue.name, [op.name for op in qr.enqueue_ops]]
                                 for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)],
               "summaries": [t.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)],
               "local_variables": [v.name for v in tf.local_variables()]}
        if fetches is None:
            return out
        out["fetch"] = [t.name for t in fetches]
        steps = []
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            for _ in range(MAX_STEPS):
                try:
                    steps.append([plain(v) for v in sess.run(fetches)])
                except errors_module.OutOfRangeError as e:
                    steps.append({"error": "OutOfRangeError", "message": e.message})
                    break
            coord.request_stop()
            coord.join(threads)
        out["steps"] = steps
    return out


# Programs recorded again as TF 2.21's tf.compat.v1 writes them by default (resource
# variables: limit_epochs counts with ResourceCountUpTo): the GraphDef a TF 2 user's old
# pipeline code produces, replayed by importing it.
TF2_DEFAULT = ["limit_epochs", "batch_in_order", "string_input_producer"]


def record_tf2_default(tf, fn, errors_module):
    """`fn`'s graph with resource variables, its init op and queue runners' op names, and
    TF's fetches: each runner's enqueue ops run until OutOfRangeError, then its close op
    (every queue here holds all its input), then the fetches until OutOfRangeError."""
    with tf.Graph().as_default() as g:
        fetches = fn(tf)
        init = tf.local_variables_initializer()
        runners = [{"enqueue": [op.name for op in qr.enqueue_ops], "close": qr.close_op.name}
                   for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)]
        out = {"graph_def": g.as_graph_def().SerializeToString().hex(), "init": init.name,
               "runners": runners, "fetch": [t.name for t in fetches], "steps": []}
        with tf.Session() as sess:
            sess.run(init)
            for runner in runners:
                try:
                    for _ in range(MAX_STEPS):
                        sess.run(runner["enqueue"])
                except errors_module.OutOfRangeError:
                    sess.run(runner["close"])
            for _ in range(MAX_STEPS):
                try:
                    out["steps"].append([plain(v) for v in sess.run(fetches)])
                except errors_module.OutOfRangeError as e:
                    out["steps"].append({"error": "OutOfRangeError", "message": e.message})
                    break
    return out


# MatchingFiles on a small tree: (pattern or patterns, relative to the tree's root) -> the
# names found, relative to it.
MATCH_TREE = ["b.txt", "a.txt", ".h.txt", "c.csv", "sub/z.txt"]
MATCH_PATTERNS = ["*.txt", ["*.csv", "*.txt"], "nope/*.txt", "a.txt", "*", "?.txt",
                  "[ab].txt", "*/*.txt", "sub", "missing.txt"]


def record_matching_files(tf):
    import tempfile

    out = []
    with tempfile.TemporaryDirectory() as root:
        for name in MATCH_TREE:
            path = Path(root, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(name)
        with tf.Graph().as_default(), tf.Session() as sess:
            for pattern in MATCH_PATTERNS:
                full = ([f"{root}/{p}" for p in pattern] if isinstance(pattern, list)
                        else f"{root}/{pattern}")
                found = sess.run(tf.io.matching_files(full))
                out.append([pattern, [f.decode()[len(root) + 1:] for f in found]])
    return out


def main():
    import tensorflow as tf
    from tensorflow.python.framework import errors as tf_errors

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    v1.disable_resource_variables()  # TF 1's ref variables, as aioflow's Variable makes
    v1.disable_control_flow_v2()  # TF 1's cond (Switch / Merge), as aioflow's cond builds
    from tensorflow.python.framework import op_def_registry

    out = {"tensorflow": tf.__version__, "programs": {}, "tf2_default": {},
           "opdefs": {name: op_def_registry.get(name).SerializeToString().hex()
                      for name in ("ResourceCountUpTo", "MatchingFiles")}}
    out["matching_files"] = record_matching_files(v1)
    for name, fn in PROGRAMS.items():
        out["programs"][name] = record(v1, fn, tf_errors)
    v1.enable_resource_variables()
    for name in TF2_DEFAULT:
        out["tf2_default"][name] = record_tf2_default(v1, PROGRAMS[name], tf_errors)
    (HERE / "input_pipelines_tf.json").write_text(
        json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
