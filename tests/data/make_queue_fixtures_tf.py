"""Writes queues_tf.json: TF 2.21's queue OpDefs, the GraphDefs its TF 1 queue classes
(tf.compat.v1.FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue, PriorityQueue) build, and
what a v1 session answers to a sequence of runs on each (values, or error class and
message).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_queue_fixtures_tf.py

Each ``program_*`` takes the TF-1-like module (``tf.compat.v1`` here, ``aioflow`` in
tests/test_queues.py) and uses only names both share; it returns the graph's fetchable
things by key and the steps: (keys to fetch, feeds by key, timeout in ms or 0). The
fixture records fetches and feeds by tensor / op name, so the test can replay the steps on
the graph aioflow builds and on TF's GraphDef imported. ``raw_*`` programs use TF's raw
ops (a wrong dtype fed to an enqueue, ...); only their GraphDefs are replayed.
This module does not import TensorFlow at import time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OPS = ["FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2", "PriorityQueueV2",
       "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2", "QueueDequeueManyV2",
       "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2", "QueueIsClosedV2",
       # TF 1's ref-handle ops, which graphs written before the V2 ops carry
       "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue", "QueueEnqueue",
       "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany", "QueueDequeueUpTo",
       "QueueClose", "QueueSize", "QueueIsClosed"]


def program_fifo_basic(tf):
    """Two components of known shapes: enqueue, enqueue_many, dequeue, dequeue_many,
    dequeue_up_to, size, close, and what a closed queue answers."""
    q = tf.FIFOQueue(3, [tf.int32, tf.float32], shapes=[[], [2]])
    x = tf.placeholder(tf.int32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    things = {
        "enq": q.enqueue((x, y)),
        "enq_many": q.enqueue_many(([10, 20], [[1.0, 2.0], [3.0, 4.0]])),
        "deq": q.dequeue(),
        "deq2": q.dequeue_many(2),
        "upto": q.dequeue_up_to(2),
        "size": q.size(),
        "closed": q.is_closed(),
        "close": q.close(),
        "x": x, "y": y,
    }
    steps = [
        (["enq"], {"x": 1, "y": [0.5, 1.5]}, 0),
        (["enq_many"], {}, 0),
        (["size", "closed"], {}, 0),
        (["deq"], {}, 0),
        (["deq2"], {}, 0),
        (["size"], {}, 0),
        (["enq"], {"x": 7, "y": [7.0, 7.5]}, 0),
        (["enq"], {"x": 8, "y": [1.0, 2.0, 3.0]}, 0),       # wrong shape
        (["enq"], {"x": [8], "y": [1.0, 2.0]}, 0),          # wrong shape
        (["enq"], {"x": 8, "y": [8.0, 8.5]}, 0),
        (["enq"], {"x": 9, "y": [9.0, 9.5]}, 0),
        (["enq"], {"x": 10, "y": [10.0, 10.5]}, 100),       # full: times out
        (["size"], {}, 0),
        (["close"], {}, 0),
        (["closed", "size"], {}, 0),
        (["close"], {}, 0),                                # closed twice
        (["enq"], {"x": 11, "y": [11.0, 11.5]}, 0),        # closed: cancelled
        (["deq2"], {}, 0),                                 # 3 left: a full batch of 2
        (["upto"], {}, 0),                                 # 1 left: a small batch
        (["upto"], {}, 0),                                 # empty and closed
        (["deq2"], {}, 0),
        (["deq"], {}, 0),
    ]
    return things, steps


def program_fifo_names_many(tf):
    """A queue with names (dicts in, dicts out), a vector component, dequeue_many of a
    placeholder n, an empty enqueue_many, a batch of the wrong size, and a dequeue that
    times out on an empty queue."""
    q = tf.FIFOQueue(10, [tf.int64, tf.string], shapes=[[3], []], names=["ids", "tag"],
                     name="named")
    n = tf.placeholder(tf.int32, [], name="n")
    ids = tf.placeholder(tf.int64, name="ids")
    tags = tf.placeholder(tf.string, [None], name="tags")
    things = {
        "enq": q.enqueue({"tag": "one", "ids": [1, 2, 3]}),
        "enq_many": q.enqueue_many({"ids": ids, "tag": tags}, name="put_many"),
        "deq": q.dequeue(),
        "deq_n": q.dequeue_many(n),
        "upto_n": q.dequeue_up_to(n, name="take_up_to"),
        "size": q.size(name="how_many"),
        "close": q.close(cancel_pending_enqueues=True),
        "n": n, "ids": ids, "tags": tags,
    }
    two = [[4, 5, 6], [7, 8, 9]]
    steps = [
        (["enq"], {}, 0),
        (["enq_many"], {"ids": two, "tags": ["two", "three"]}, 0),
        (["enq_many"], {"ids": np.zeros((0, 3), np.int64), "tags": []}, 0),
        (["enq_many"], {"ids": two, "tags": ["a", "b", "c"]}, 0),
        (["enq_many"], {"ids": [[1, 2]], "tags": ["a"]}, 0),
        (["size"], {}, 0),
        (["deq"], {}, 0),
        (["deq_n"], {"n": 0}, 0),
        (["deq_n"], {"n": -1}, 0),
        (["deq_n"], {"n": 2}, 0),
        (["deq"], {}, 100),                                # empty: times out
        (["upto_n"], {"n": 3}, 100),                       # open: waits for 3, times out
        (["size"], {}, 0),
        (["close"], {}, 0),
        (["upto_n"], {"n": 3}, 0),
    ]
    return things, steps


def program_fifo_unknown_shapes(tf):
    """No shapes: any shape enqueues; dequeue_many needs specified shapes."""
    q = tf.FIFOQueue(5, tf.float32)
    v = tf.placeholder(tf.float32, name="v")
    things = {"enq": q.enqueue(v), "enq_many": q.enqueue_many(v), "deq": q.dequeue(),
              "deq2": q.dequeue_many(2), "size": q.size(), "v": v}
    steps = [
        (["enq"], {"v": [[1.0, 2.0]]}, 0),
        (["enq"], {"v": 3.0}, 0),
        (["enq_many"], {"v": [[1.0], [2.0]]}, 0),
        (["deq"], {}, 0),
        (["deq"], {}, 0),
        (["deq2"], {}, 0),
        (["size"], {}, 0),
    ]
    return things, steps


def program_padding(tf):
    """PaddingFIFOQueue: unknown dims padded with zeros ("" for strings) to the batch's
    largest in dequeue_many / dequeue_up_to; single dequeues unpadded."""
    q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None], [None, 2]])
    a = tf.placeholder(tf.int32, [None], name="a")
    s = tf.placeholder(tf.string, [None, 2], name="s")
    things = {"enq": q.enqueue([a, s]), "deq": q.dequeue(), "deq2": q.dequeue_many(2),
              "deq0": q.dequeue_many(0), "upto": q.dequeue_up_to(5), "close": q.close(),
              "a": a, "s": s}
    steps = [
        (["enq"], {"a": [1], "s": [["a", "b"]]}, 0),
        (["enq"], {"a": [2, 3, 4], "s": np.zeros((0, 2), object)}, 0),
        (["enq"], {"a": [], "s": [["c", "d"], ["e", "f"]]}, 0),
        (["enq"], {"a": [5, 6], "s": [["g", "h"]]}, 0),
        (["deq2"], {}, 0),
        (["deq"], {}, 0),
        (["deq0"], {}, 0),
        (["enq"], {"a": [7], "s": [["i", "j"], ["k", "l"], ["m", "n"]]}, 0),
        (["close"], {}, 0),
        (["upto"], {}, 0),
        (["upto"], {}, 0),
    ]
    return things, steps


def program_padding_errors(tf):
    """A padded component fed with the wrong rank or a fixed dim that differs."""
    q = tf.PaddingFIFOQueue(4, [tf.float32], shapes=[[None, 3]], name="pad")
    v = tf.placeholder(tf.float32, name="v")
    things = {"enq": q.enqueue(v), "enq_many": q.enqueue_many(v), "upto": q.dequeue_up_to(4),
              "close": q.close(), "v": v}
    steps = [
        (["enq"], {"v": [[1.0, 2.0, 3.0]]}, 0),
        (["enq"], {"v": [1.0, 2.0, 3.0]}, 0),
        (["enq"], {"v": [[1.0, 2.0]]}, 0),
        (["enq_many"], {"v": [[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]]}, 0),
        (["enq_many"], {"v": [[1.0, 2.0, 3.0]]}, 0),
        (["close"], {}, 0),
        (["upto"], {}, 0),
    ]
    return things, steps


def program_shuffle_seeded(tf):
    """RandomShuffleQueue with an op seed: the order TF's Philox stream gives, dequeues
    waiting while size <= min_after_dequeue, and draining once closed."""
    q = tf.RandomShuffleQueue(20, 4, tf.int32, shapes=[[]], seed=7)
    things = {"fill": q.enqueue_many([list(range(12))]), "deq": q.dequeue(),
              "deq3": q.dequeue_many(3), "upto": q.dequeue_up_to(10), "size": q.size(),
              "close": q.close()}
    steps = [(["fill"], {}, 0)] + [(["deq"], {}, 0)] * 5 + [
        (["deq3"], {}, 0),
        (["size"], {}, 0),
        (["deq"], {}, 100),                               # at min_after_dequeue: waits
        (["close"], {}, 0),
        (["deq"], {}, 0),
        (["upto"], {}, 0),
        (["deq"], {}, 0),
    ]
    return things, steps


def program_shuffle_two(tf):
    """A two-component RandomShuffleQueue with a graph seed and shared_name (TF then
    derives seed2 from the graph seed and the name) taking batches."""
    tf.set_random_seed(11)
    q = tf.RandomShuffleQueue(10, 0, [tf.float32, tf.int64], shapes=[[2], []],
                              shared_name="shuffled", name="rsq")
    things = {"fill": q.enqueue_many(([[float(i), -float(i)] for i in range(8)],
                                      list(range(100, 108)))),
              "deq2": q.dequeue_many(2), "close": q.close(), "upto": q.dequeue_up_to(5)}
    steps = [(["fill"], {}, 0), (["deq2"], {}, 0), (["deq2"], {}, 0), (["close"], {}, 0),
             (["upto"], {}, 0), (["upto"], {}, 0)]
    return things, steps


def program_priority(tf):
    """PriorityQueue: the int64 priority first, smallest out first."""
    q = tf.PriorityQueue(6, [tf.string, tf.float32], shapes=[[], [2]])
    p = tf.placeholder(tf.int64, [], name="p")
    things = {
        "fill": q.enqueue_many(([5, -2, 9, 0], ["five", "minus two", "nine", "zero"],
                                [[5.0, 5.5], [-2.0, -2.5], [9.0, 9.5], [0.0, 0.5]])),
        "enq": q.enqueue((p, "fed", [1.0, 1.5])),
        "deq": q.dequeue(), "deq2": q.dequeue_many(2), "size": q.size(), "close": q.close(),
        "upto": q.dequeue_up_to(4), "p": p}
    steps = [(["fill"], {}, 0), (["enq"], {"p": 3}, 0), (["deq"], {}, 0), (["deq2"], {}, 0),
             (["size"], {}, 0), (["close"], {}, 0), (["upto"], {}, 0), (["deq"], {}, 0)]
    return things, steps


def program_shared(tf):
    """Two queue nodes with one shared_name are one queue; a third with other types is
    refused as TF's resource manager refuses it."""
    a = tf.FIFOQueue(4, tf.int32, shapes=[[]], shared_name="common", name="a")
    b = tf.FIFOQueue(4, tf.int32, shapes=[[]], shared_name="common", name="b")
    c = tf.FIFOQueue(4, tf.float32, shapes=[[]], shared_name="common", name="c")
    d = tf.FIFOQueue(5, tf.int32, shapes=[[]], shared_name="common", name="d")
    e = tf.FIFOQueue(4, tf.int32, shapes=[[1]], shared_name="common", name="e")
    f = tf.PaddingFIFOQueue(4, tf.int32, shapes=[[]], shared_name="common", name="f")
    things = {"put": a.enqueue(41), "take": b.dequeue(), "size_a": a.size(),
              "size_b": b.size(), "size_c": c.size(), "size_d": d.size(),
              "size_e": e.size(), "size_f": f.size()}
    steps = [(["put"], {}, 0), (["put"], {}, 0), (["size_b"], {}, 0), (["take"], {}, 0),
             (["size_a"], {}, 0), (["size_c"], {}, 0), (["size_d"], {}, 0),
             (["size_e"], {}, 0), (["size_f"], {}, 0)]
    return things, steps


def program_queue_runner(tf):
    """A QueueRunner's graph: the queue's close and cancel ops, built by the runner."""
    q = tf.FIFOQueue(4, tf.int32, shapes=[[]], name="input")
    enq = q.enqueue_many([[1, 2, 3]])
    qr = tf.train.QueueRunner(q, [enq])
    tf.train.add_queue_runner(qr)
    things = {"enq": enq, "close": qr.close_op, "cancel": qr.cancel_op, "deq": q.dequeue()}
    steps = [(["deq"], {}, 100), (["enq"], {}, 0), (["deq"], {}, 0), (["enq"], {}, 100),
             (["cancel"], {}, 0), (["close"], {}, 0), (["deq"], {}, 0), (["deq"], {}, 0),
             (["deq"], {}, 0)]
    return things, steps


def raw_wrong_dtype(tf):
    """QueueEnqueueV2 / QueueEnqueueManyV2 fed components TF's Python would refuse."""
    raw = tf.raw_ops
    q = tf.FIFOQueue(4, [tf.int32, tf.float32], shapes=[[], []], name="q")
    things = {
        "wrong_type": raw.QueueEnqueueV2(handle=q.queue_ref,
                                         components=[tf.constant(1.5), tf.constant(2.5)],
                                         name="wrong_type"),
        "wrong_count": raw.QueueEnqueueV2(handle=q.queue_ref, components=[tf.constant(1)],
                                          name="wrong_count"),
        "many_wrong_batch": raw.QueueEnqueueManyV2(
            handle=q.queue_ref, components=[tf.constant([1, 2]), tf.constant([1.5])],
            name="many_wrong_batch"),
        "deq_wrong_types": raw.QueueDequeueV2(handle=q.queue_ref,
                                              component_types=[tf.float32, tf.float32],
                                              name="deq_wrong_types"),
        "size": q.size(),
    }
    steps = [([k], {}, 0) for k in ("wrong_type", "wrong_count", "many_wrong_batch",
                                    "deq_wrong_types", "size")]
    return things, steps


def raw_unknown_many(tf):
    """QueueEnqueueManyV2 with components of differing batch sizes, no shapes set."""
    raw = tf.raw_ops
    q = tf.FIFOQueue(4, [tf.int32, tf.int32], name="free")
    things = {"many": raw.QueueEnqueueManyV2(
        handle=q.queue_ref, components=[tf.constant([1, 2]), tf.constant([3])], name="many"),
        "size": q.size()}
    return things, [(["many"], {}, 0), (["size"], {}, 0)]


def raw_ref_ops(tf):
    """The TF 1 ref-handle ops (FIFOQueue, QueueEnqueue, ...) of older GraphDefs."""
    raw = tf.raw_ops
    q = raw.FIFOQueue(component_types=[tf.int32, tf.string], shapes=[[], []], capacity=3,
                      name="old")
    p = raw.PaddingFIFOQueue(component_types=[tf.float32], shapes=[[None]], name="old_pad")
    things = {
        "enq": raw.QueueEnqueue(handle=q, components=[tf.constant(4), tf.constant("d")],
                                name="enq"),
        "many": raw.QueueEnqueueMany(handle=q, components=[tf.constant([5, 6]),
                                                           tf.constant(["e", "f"])],
                                     name="many"),
        "deq": raw.QueueDequeue(handle=q, component_types=[tf.int32, tf.string], name="deq"),
        "deq2": raw.QueueDequeueMany(handle=q, n=2, component_types=[tf.int32, tf.string],
                                     name="deq2"),
        "size": raw.QueueSize(handle=q, name="size"),
        "closed": raw.QueueIsClosed(handle=q, name="closed"),
        "close": raw.QueueClose(handle=q, name="close"),
        "upto": raw.QueueDequeueUpTo(handle=q, n=2, component_types=[tf.int32, tf.string],
                                     name="upto"),
        "pad_enq": raw.QueueEnqueue(handle=p, components=[tf.constant([1.5, 2.5])],
                                    name="pad_enq"),
        "pad_enq1": raw.QueueEnqueue(handle=p, components=[tf.constant([3.5])],
                                     name="pad_enq1"),
        "pad_deq": raw.QueueDequeueMany(handle=p, n=2, component_types=[tf.float32],
                                        name="pad_deq"),
    }
    steps = [([k], {}, 0) for k in ("enq", "many", "size", "deq", "deq2", "enq", "closed",
                                    "close", "closed", "upto", "upto", "pad_enq", "pad_enq1",
                                    "pad_deq")]
    return things, steps


PROGRAMS = {name[len("program_"):]: fn for name, fn in sorted(globals().items())
            if name.startswith("program_")}
RAW = {name: fn for name, fn in sorted(globals().items()) if name.startswith("raw_")}


def name_of(thing) -> str:
    """A fetch's graph name: the tensor's ("x:0") or the op's."""
    return thing.name


def flatten(thing) -> list:
    """A dequeue's result (tensor, list, dict by name) as a list of (key, tensor)."""
    if isinstance(thing, dict):
        return sorted(thing.items())
    if isinstance(thing, (list, tuple)):
        return list(enumerate(thing))
    return [(None, thing)]


def plain(value):
    """A fetched value as JSON: {"dtype", "shape", "value"} (bytes as latin-1 text)."""
    if value is None:
        return None
    arr = np.asarray(value)
    flat = arr.ravel().tolist()
    if arr.dtype == object or arr.dtype.kind in "SU":
        flat = [v.decode("latin-1") if isinstance(v, bytes) else v for v in flat]
        dtype = "string"
    else:
        dtype = arr.dtype.name
    return {"dtype": dtype, "shape": list(arr.shape), "value": flat}


def record(tf, fn, errors_module):
    """Build `fn`'s graph in a fresh graph; run its steps in one session."""
    from tf_error_text import error_record

    v1 = tf
    with v1.Graph().as_default() as g:
        things, steps = fn(v1)
        names = {key: [(k, name_of(t)) for k, t in flatten(thing)]
                 for key, thing in things.items()}
        graph_def = g.as_graph_def()
        results = []
        with v1.Session() as sess:
            for keys, feeds, timeout in steps:
                fetches = [g.as_graph_element(n) for key in keys for _, n in names[key]]
                feed = {g.as_graph_element(names[k][0][1]): v for k, v in feeds.items()}
                options = v1.RunOptions(timeout_in_ms=timeout) if timeout else None
                try:
                    got = sess.run(fetches, feed, options=options)
                    results.append({"values": [plain(v) for v in got]})
                except errors_module.OpError as e:
                    results.append(error_record(e))
    step_records = [{"fetch": [n for key in keys for _, n in names[key]],
                     "feed": {names[k][0][1]: plain(v) for k, v in feeds.items()},
                     "timeout_ms": timeout} for keys, feeds, timeout in steps]
    return {"graph_def": graph_def.SerializeToString().hex(), "names": names,
            "steps": step_records, "results": results}


def main():
    sys.path.insert(0, str(HERE))
    import tensorflow as tf
    from tensorflow.python.framework import errors as tf_errors
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    v1.raw_ops = tf.raw_ops
    out = {"tensorflow": tf.__version__, "opdefs": {}, "programs": {}, "raw": {}}
    for name in OPS:
        op_def = op_def_registry.get(name)
        out["opdefs"][name] = op_def.SerializeToString().hex()
    for name, fn in PROGRAMS.items():
        out["programs"][name] = record(v1, fn, tf_errors)
    for name, fn in RAW.items():
        out["raw"][name] = record(v1, fn, tf_errors)
    (HERE / "queues_tf.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
