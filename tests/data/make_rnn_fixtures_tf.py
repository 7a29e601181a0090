"""Writes the recurrent-network fixtures (tests/data/rnn.npz, rnn.json): tf.compat.v1's
dynamic_rnn over BasicRNNCell (time major), BasicLSTMCell, LSTMCell (peepholes,
projection, clipping, sharded weights), GRUCell, MultiRNNCell, DropoutWrapper (its state
filter, variational), ResidualWrapper and DeviceWrapper, with and without sequence_length,
static_rnn, bidirectional_dynamic_rnn and static_bidirectional_rnn, as TF 2.21 builds them
(GraphDefs, node for node) and computes them (outputs and final states after the
variables' seeded initialization).

Run from the project root with TF 2.21 and tf-keras 2.21 (never dependencies):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_rnn_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_rnn_graphs.py) and returns its fetches by name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
R = np.random.default_rng(5)
X = R.normal(size=(3, 4, 2)).astype(np.float32)
LENGTHS = np.array([4, 2, 3], np.int32)


def _inputs(tf):
    tf.set_random_seed(3)
    return tf.placeholder(tf.float32, [3, 4, 2], name="x")


def _flat(state) -> list:
    """A cell's state (a tensor, a tuple, LSTMStateTuples within tuples) as its tensors."""
    if isinstance(state, tuple):
        return [t for s in state for t in _flat(s)]
    return [state]


def _fetches(outputs, state, tf):
    return {"outputs": outputs, **{f"state{i}": s for i, s in enumerate(_flat(state))}}


def basic_lstm(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.BasicLSTMCell(5)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def lstm_peephole_proj(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.LSTMCell(5, use_peepholes=True, num_proj=3, cell_clip=2.0,
                                   proj_clip=1.5)
    lengths = tf.placeholder(tf.int32, [3], name="lengths")
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def lstm_shards(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.LSTMCell(5, num_unit_shards=2, num_proj=3, num_proj_shards=2)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def basic_rnn_time_major(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.BasicRNNCell(3, activation=tf.nn.relu)
    outputs, state = tf.nn.dynamic_rnn(cell, tf.transpose(x, [1, 0, 2]), dtype=tf.float32,
                                       time_major=True, swap_memory=True)
    return _fetches(outputs, state, tf)


def gru(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.GRUCell(4)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, time_major=False)
    return _fetches(outputs, state, tf)


def gru_resource(tf):
    x = _inputs(tf)
    with tf.variable_scope("res", use_resource=True):
        outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def multi_cell(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(4),
                                        tf.nn.rnn_cell.GRUCell(3)])
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def dropout_wrapper(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(4), input_keep_prob=1.0,
                                         output_keep_prob=1.0, state_keep_prob=1.0)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def dropout_wrapper_keep(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(4),
                                         input_keep_prob=0.8, output_keep_prob=0.7, seed=5)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, parallel_iterations=1)
    return {"graph_only": outputs}


def dropout_lstm_state(tf):
    """State dropout on an LSTM: the memory c is never dropped (TF's default filter)."""
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(4),
                                         state_keep_prob=0.6, seed=9)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, parallel_iterations=1)
    return _fetches(outputs, state, tf)


def dropout_variational(tf):
    """variational_recurrent: one noise per sequence for inputs, states and outputs."""
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.DropoutWrapper(
        tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(3),
                                     tf.nn.rnn_cell.GRUCell(2)]),
        input_keep_prob=0.7, output_keep_prob=0.8, state_keep_prob=0.9,
        variational_recurrent=True, input_size=2, dtype=tf.float32, seed=4)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def wrappers(tf):
    """ResidualWrapper (inputs added to a GRU's outputs) inside a DeviceWrapper."""
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.DeviceWrapper(
        tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(2)), "/cpu:0")
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    return _fetches(outputs, state, tf)


def static(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.GRUCell(3)
    outputs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32)
    return {"outputs": tf.stack(outputs), "state0": state}


def static_multi(tf):
    x = _inputs(tf)
    cell = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicLSTMCell(3), output_keep_prob=1.0),
        tf.nn.rnn_cell.GRUCell(2)])
    lengths = tf.placeholder(tf.int32, [3], name="lengths")
    outputs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32,
                                      sequence_length=lengths)
    return _fetches(tf.stack(outputs), state, tf)


def bidirectional(tf):
    x = _inputs(tf)
    lengths = tf.placeholder(tf.int32, [3], name="lengths")
    (fw, bw), (sfw, sbw) = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.BasicLSTMCell(2), x,
        sequence_length=lengths, dtype=tf.float32)
    return {"fw": fw, "bw": bw, "state0": sfw, "state1": sbw.c, "state2": sbw.h}


def static_bidirectional(tf):
    x = _inputs(tf)
    lengths = tf.placeholder(tf.int32, [3], name="lengths")
    outputs, sfw, sbw = tf.nn.static_bidirectional_rnn(
        tf.nn.rnn_cell.GRUCell(2), tf.nn.rnn_cell.BasicLSTMCell(3), tf.unstack(x, axis=1),
        sequence_length=lengths, dtype=tf.float32)
    return {"outputs": tf.stack(outputs), "state0": sfw, "state1": sbw.c, "state2": sbw.h}


PROGRAMS = {"basic_lstm": basic_lstm, "lstm_peephole_proj": lstm_peephole_proj,
            "lstm_shards": lstm_shards, "basic_rnn_time_major": basic_rnn_time_major,
            "gru": gru, "gru_resource": gru_resource,
            "multi_cell": multi_cell, "dropout_wrapper": dropout_wrapper,
            "dropout_wrapper_keep": dropout_wrapper_keep,
            "dropout_lstm_state": dropout_lstm_state,
            "dropout_variational": dropout_variational, "static": static,
            "static_multi": static_multi, "wrappers": wrappers,
            "static_bidirectional": static_bidirectional,
            "bidirectional": bidirectional}


def feeds(graph):
    out = {graph.get_tensor_by_name("x:0"): X}
    try:
        out[graph.get_tensor_by_name("lengths:0")] = LENGTHS
    except KeyError:
        pass
    return out


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.nn.rnn_cell from tf-keras
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    arrays, meta = {}, {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            fetches = program(v1)
            arrays[f"{name}/graph_def"] = np.frombuffer(
                g.as_graph_def().SerializeToString(deterministic=True), np.uint8)
            fetches = {k: v for k, v in fetches.items() if k != "graph_only"}
            meta[name] = {"variables": [v.op.name for v in v1.global_variables()],
                          "fetches": sorted(fetches)}
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                values = sess.run(fetches, feeds(g))
        for key, value in values.items():
            arrays[f"{name}/{key}"] = np.asarray(value)
    np.savez_compressed(HERE / "rnn.npz", **arrays)
    (HERE / "rnn.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
