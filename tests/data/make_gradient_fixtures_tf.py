"""Writes the gradient fixtures: for each program of tests/gradient_programs.py, the
GraphDef TF 2.21 (tf.compat.v1, v1 control flow) builds with tf.gradients and the values of
the gradients for the program's fixed inputs; TF's OpDefs of the gradient ops aioflow
registers; and meta graphs of a small MLP trained with GradientDescent (ref variables)
and of a small conv net trained with Adam (resource variables), with the values of their
gradient tensors and of the variables after training steps.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_gradient_fixtures_tf.py

Naming programs (``... make_gradient_fixtures_tf.py qr random_gamma``) rewrites only those
programs' files and their index entries (and the OpDefs), leaving the rest as they are.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "gradients_tf"
sys.path.insert(0, str(HERE.parent))

import gradient_programs  # noqa: E402

OP_DEFS = ["BroadcastGradientArgs", "ConcatOffset", "ReluGrad", "Relu6Grad", "EluGrad",
           "SeluGrad", "LeakyReluGrad", "SoftplusGrad", "SoftsignGrad", "SigmoidGrad",
           "TanhGrad", "RsqrtGrad", "SqrtGrad", "ReciprocalGrad", "InvGrad", "BiasAddGrad",
           "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
           "StridedSliceGrad", "PreventGradient", "InvertPermutation", "MirrorPadGrad",
           "SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad", "Polygamma",
           "FakeQuantWithMinMaxArgsGradient", "FakeQuantWithMinMaxVarsGradient",
           "FakeQuantWithMinMaxVarsPerChannelGradient", "CropAndResizeGradImage",
           "CropAndResizeGradBoxes",
           "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2", "TensorArrayGradV3",
           "SparseAddGrad", "SparseSliceGrad", "SparseFillEmptyRowsGrad", "RandomGammaGrad",
           "MatrixTriangularSolve"]


def write_forward_graphs(tf) -> None:
    """Forward graphs that call functions, which the function-call programs import (TF
    emits SymbolicGradient for a call whose function has no registered gradient, as
    after an import): a PartitionedCall of a tf.function with two results, one of them
    calling another tf.function, and a direct call of a Defun."""
    from tensorflow.python.framework import function

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.placeholder(tf.float32, [3], name="w")

        @tf.function
        def inner(a):
            return tf.sin(a) * a

        @tf.function
        def outer(a, b):
            return tf.tanh(a) * b + inner(a * b), tf.cos(b)

        y, z = outer(x, w)

        @function.Defun(tf.float32, tf.float32)
        def scaled_exp(a, b):
            return a * tf.exp(b)

        v = scaled_exp(x, w)
        v.set_shape([3])
        tf.identity(y, name="y")
        tf.identity(z, name="z")
        tf.identity(v, name="v")
    (OUT / "forward_function_calls.pb").write_bytes(
        graph.as_graph_def().SerializeToString())

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")

        @function.Defun(tf.float32, tf.float32)
        def halved(a, dy):
            return dy * 0.5 + a * 0.0

        @function.Defun(tf.float32, grad_func=halved)
        def cube(a):
            return a * a * a

        tf.identity(cube(x), name="y")
    (OUT / "forward_function_library_gradient.pb").write_bytes(
        graph.as_graph_def().SerializeToString())

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        v = tf.get_variable("v", initializer=tf.constant([1.0, -2.0, 0.5]), use_resource=True)

        @tf.function
        def times_variable(a):
            return tf.tanh(a) * v

        tf.identity(times_variable(x), name="y")
    (OUT / "forward_function_variable.pb").write_bytes(
        graph.as_graph_def().SerializeToString())

    from tensorflow.python.ops import cond_v2, while_v2

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.placeholder(tf.float32, [3], name="w")
        p = tf.placeholder(tf.bool, [], name="p")
        y = cond_v2.cond_v2(p, lambda: tf.tanh(x) * w, lambda: tf.sin(x * w) + w)
        tf.identity(y, name="cond_y")
        _, v, u = while_v2.while_loop(lambda i, v, u: i < 3,
                                      lambda i, v, u: (i + 1, tf.sin(v) * w, u + v * v),
                                      [tf.constant(0), x, tf.zeros([3])])
        tf.identity(v, name="while_v")
        tf.identity(u, name="while_u")

        @tf.function
        def nested(a, b):  # a tf.function builds its cond and loop as If/While
            c = tf.cond(tf.reduce_sum(a) > 0.0, lambda: a * b, lambda: tf.exp(a))
            return tf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, tf.sin(s) * b),
                                 [tf.constant(0), c])[1]

        tf.identity(nested(x, w), name="nested_y")
    (OUT / "forward_functional_control_flow.pb").write_bytes(
        graph.as_graph_def().SerializeToString())
    write_nested_functional_graph(tf)


def write_nested_functional_graph(tf) -> None:
    """Functional If / While (cond_v2 / while_v2) in the forms whose gradients take TF's
    other paths: a loop variable of unknown shape (Shape ops moved into the forward body),
    a cond in a loop body and a loop in a cond branch (nested rewrites), a branch that
    ignores an input and returns a constant (zeros, dummy inputs), maximum_iterations,
    a resource variable read in a branch and in a loop body, a three-branch Case, a
    branch whose gradient is IndexedSlices (a gather) beside a dense one, gathers from a
    tensor and a variable in a loop body, a loop variable gathered (an IndexedSlices
    gradient of a loop variable), an embedding lookup of a variable in a branch, a loop in
    a loop."""
    from tensorflow.python.ops import cond_v2, while_v2

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        w = tf.placeholder(tf.float32, [3], name="w")
        p = tf.placeholder(tf.bool, [], name="p")
        _, a = while_v2.while_loop(lambda i, v: i < 2,
                                   lambda i, v: (i + 1, tf.sin(v) * tf.reduce_sum(v)),
                                   [tf.constant(0), x])
        tf.identity(a, name="unknown_shape_y")
        _, b = while_v2.while_loop(
            lambda i, v: i < 2,
            lambda i, v: (i + 1, cond_v2.cond_v2(p, lambda: tf.tanh(v) * w, lambda: v * v)),
            [tf.constant(0), w])
        tf.identity(b, name="cond_in_while_y")
        c = cond_v2.cond_v2(
            p, lambda: while_v2.while_loop(lambda i, v: i < 2,
                                           lambda i, v: (i + 1, tf.sin(v) * w),
                                           [tf.constant(0), w])[1],
            lambda: tf.exp(w))
        tf.identity(c, name="while_in_cond_y")
        d1, d2 = cond_v2.cond_v2(p, lambda: (tf.sin(w), tf.cos(w) * 2.0),
                                 lambda: (w * w, tf.constant([1.0, 2.0, 3.0])))
        tf.identity(d1, name="two_outputs_y1")
        tf.identity(d2, name="two_outputs_y2")
        _, e = while_v2.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * w),
                                   [tf.constant(0), w], maximum_iterations=3)
        tf.identity(e, name="max_iterations_y")
        v = tf.get_variable("v", initializer=tf.constant([1.0, -2.0, 0.5]), use_resource=True)
        f = cond_v2.cond_v2(p, lambda: v * w, lambda: tf.sin(w))
        tf.identity(f, name="variable_y")
        _, g = while_v2.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, tf.sin(a) * v),
                                   [tf.constant(0), w])
        tf.identity(g, name="while_variable_y")
        k = tf.placeholder(tf.int32, [], name="k")
        h = tf.switch_case(k, [lambda: tf.sin(w), lambda: w * w, lambda: tf.exp(w) * 2.0])
        tf.identity(h, name="case_y")
        s = cond_v2.cond_v2(p, lambda: tf.gather(w, [0, 2]) * 2.0, lambda: w[:2] * 3.0)
        tf.identity(s, name="gather_y")
        _, q = while_v2.while_loop(
            lambda i, a: i < 2,
            lambda i, a: (i + 1, a * tf.gather(w, [2, 0, 1]) + tf.gather(v, [1, 1, 0])),
            [tf.constant(0), w])
        tf.identity(q, name="while_gather_y")
        _, r = while_v2.while_loop(lambda i, a: i < 2,
                                   lambda i, a: (i + 1, tf.gather(a, [2, 0, 1]) * 2.0),
                                   [tf.constant(0), w])
        tf.identity(r, name="while_gather_loop_var_y")
        e = cond_v2.cond_v2(p, lambda: tf.nn.embedding_lookup(v, [0, 2]) * 2.0,
                            lambda: w[:2] * 3.0)
        tf.identity(e, name="embedding_in_cond_y")
        _, n = while_v2.while_loop(
            lambda i, a: i < 2,
            lambda i, a: (i + 1, while_v2.while_loop(
                lambda j, b: j < 2, lambda j, b: (j + 1, tf.sin(b) * w), [tf.constant(0), a])[1]),
            [tf.constant(0), w])
        tf.identity(n, name="while_in_while_y")
    (OUT / "forward_functional_nested.pb").write_bytes(graph.as_graph_def().SerializeToString())


def write_programs(tf, only: list[str]) -> dict:
    index = {}
    for name, program in gradient_programs.PROGRAMS.items():
        if only and name not in only:
            continue
        graph, n_forward, spec, grads = gradient_programs.build(tf, program)
        (OUT / f"{name}.pb").write_bytes(graph.as_graph_def().SerializeToString())
        fetches = gradient_programs.fetchable(tf, grads)
        with tf.Session(graph=graph) as sess:
            if spec.get("init"):
                sess.run(spec["init"])
            values = sess.run([f for f in fetches if f is not None], spec["feeds"])
        dense = iter(gradient_programs.densify(v) for v in values)
        arrays = {str(i): next(dense) for i, f in enumerate(fetches) if f is not None}
        np.savez(OUT / f"{name}.npz", **arrays)
        index[name] = {"n_forward": n_forward, "n_grads": len(grads),
                       "none": [i for i, f in enumerate(fetches) if f is None]}
    return index


def write_op_defs() -> None:
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry
    ops = op_def_pb2.OpList()
    for name in OP_DEFS:
        ops.op.add().CopyFrom(op_def_registry.get(name))
    (OUT / "grad_op_defs.pb").write_bytes(ops.SerializeToString())


def _i64(rows):
    return np.array(rows, np.int64)


def _f32(values):
    return np.array(values, np.float32)


# (case id, op, {input: value}, {attr: value}): the new gradient kernels' values and errors.
KERNEL_CASES = [
    ("add_grad", "SparseAddGrad", {"backprop_val_grad": _f32([1, 2, 3]),
                                   "a_indices": _i64([[0, 0], [1, 1]]),
                                   "b_indices": _i64([[0, 0], [2, 1]]),
                                   "sum_indices": _i64([[0, 0], [1, 1], [2, 1]])}, {}),
    ("add_grad_dropped", "SparseAddGrad", {"backprop_val_grad": _f32([4, 5]),
                                           "a_indices": _i64([[0, 1], [1, 0], [2, 2]]),
                                           "b_indices": _i64([[1, 0], [2, 0]]),
                                           "sum_indices": _i64([[0, 1], [2, 2]])}, {}),
    ("add_grad_unordered", "SparseAddGrad", {"backprop_val_grad": _f32([4, 5, 6]),
                                             "a_indices": _i64([[1, 0], [0, 1], [2, 2]]),
                                             "b_indices": _i64([[0, 1], [2, 2]]),
                                             "sum_indices": _i64([[0, 1], [1, 0], [2, 2]])},
     {}),
    ("slice_grad_unordered", "SparseSliceGrad", {"backprop_val_grad": _f32([5, 6]),
                                                 "input_indices": _i64([[2, 3], [1, 2], [0, 0]]),
                                                 "input_start": _i64([1, 1]),
                                                 "output_indices": _i64([[1, 2], [0, 1]])}, {}),
    ("add_grad_matrix", "SparseAddGrad", {"backprop_val_grad": _f32([1]), "a_indices": _i64([0]),
                                          "b_indices": _i64([[0, 0]]),
                                          "sum_indices": _i64([[0, 0]])}, {}),
    ("add_grad_vector", "SparseAddGrad", {"backprop_val_grad": _f32([[1]]),
                                          "a_indices": _i64([[0, 0]]),
                                          "b_indices": _i64([[0, 0]]),
                                          "sum_indices": _i64([[0, 0]])}, {}),
    ("add_grad_ndims", "SparseAddGrad", {"backprop_val_grad": _f32([1]),
                                         "a_indices": _i64([[0, 0]]), "b_indices": _i64([[0]]),
                                         "sum_indices": _i64([[0, 0]])}, {}),
    ("add_grad_nnz", "SparseAddGrad", {"backprop_val_grad": _f32([1, 2]),
                                       "a_indices": _i64([[0, 0]]), "b_indices": _i64([[0, 0]]),
                                       "sum_indices": _i64([[0, 0]])}, {}),
    ("slice_grad", "SparseSliceGrad", {"backprop_val_grad": _f32([5, 6]),
                                       "input_indices": _i64([[0, 0], [1, 2], [2, 3]]),
                                       "input_start": _i64([1, 1]),
                                       "output_indices": _i64([[0, 1], [1, 2]])}, {}),
    ("slice_grad_matrix", "SparseSliceGrad", {"backprop_val_grad": _f32([5]),
                                              "input_indices": _i64([0]),
                                              "input_start": _i64([1]),
                                              "output_indices": _i64([[0]])}, {}),
    ("slice_grad_vector", "SparseSliceGrad", {"backprop_val_grad": _f32(5),
                                              "input_indices": _i64([[0]]),
                                              "input_start": _i64([1]),
                                              "output_indices": _i64([[0]])}, {}),
    ("slice_grad_ndims", "SparseSliceGrad", {"backprop_val_grad": _f32([5]),
                                             "input_indices": _i64([[0]]),
                                             "input_start": _i64([1]),
                                             "output_indices": _i64([[0, 1]])}, {}),
    ("slice_grad_rows", "SparseSliceGrad", {"backprop_val_grad": _f32([5, 1]),
                                            "input_indices": _i64([[0]]),
                                            "input_start": _i64([1]),
                                            "output_indices": _i64([[0], [1]])}, {}),
    ("slice_grad_nnz", "SparseSliceGrad", {"backprop_val_grad": _f32([5, 1]),
                                           "input_indices": _i64([[0], [1]]),
                                           "input_start": _i64([1]),
                                           "output_indices": _i64([[0]])}, {}),
    ("slice_grad_start", "SparseSliceGrad", {"backprop_val_grad": _f32([5]),
                                             "input_indices": _i64([[0]]),
                                             "input_start": _i64([[1]]),
                                             "output_indices": _i64([[0]])}, {}),
    ("slice_grad_start_length", "SparseSliceGrad", {"backprop_val_grad": _f32([5]),
                                                    "input_indices": _i64([[0]]),
                                                    "input_start": _i64([1, 2]),
                                                    "output_indices": _i64([[0]])}, {}),
    ("slice_grad_unpropagated", "SparseSliceGrad", {"backprop_val_grad": _f32([5]),
                                                    "input_indices": _i64([[0]]),
                                                    "input_start": _i64([1]),
                                                    "output_indices": _i64([[7]])}, {}),
    ("fill_grad", "SparseFillEmptyRowsGrad", {"reverse_index_map": _i64([0, 2]),
                                              "grad_values": _f32([1, 2, 3, 4])}, {}),
    ("fill_grad_vector", "SparseFillEmptyRowsGrad", {"reverse_index_map": _i64([[0]]),
                                                     "grad_values": _f32([1])}, {}),
    ("fill_grad_values", "SparseFillEmptyRowsGrad", {"reverse_index_map": _i64([0]),
                                                     "grad_values": _f32(1)}, {}),
    ("fill_grad_range", "SparseFillEmptyRowsGrad", {"reverse_index_map": _i64([0, 5]),
                                                    "grad_values": _f32([1, 2])}, {}),
    ("gamma_grad", "RandomGammaGrad", {"alpha": _f32([0.5, 1, 3, 20]),
                                       "sample": _f32([0.3, 1.2, 2.5, 18])}, {}),
    ("gamma_grad_f64", "RandomGammaGrad", {
        "alpha": np.array([0.1, 0.5, 1, 3, 20, 200]),
        "sample": np.array([1e-4, 0.3, 1.2, 2.5, 18, 210])}, {}),
    ("gamma_grad_broadcast", "RandomGammaGrad", {"alpha": _f32([[0.5], [2]]),
                                                 "sample": _f32([0.3, 1.2, 2.5])}, {}),
    ("gamma_grad_shapes", "RandomGammaGrad", {"alpha": _f32([0.5, 2]),
                                              "sample": _f32([0.3, 1.2, 2.5])}, {}),
    ("solve_lower", "MatrixTriangularSolve", {"matrix": _f32([[2, 0], [1, 3]]),
                                              "rhs": _f32([[1, 4], [2, 5]])}, {}),
    ("solve_upper_adjoint", "MatrixTriangularSolve", {
        "matrix": np.array([[[2, 7, 1], [9, 3, 2], [9, 9, 4]]], np.float64),
        "rhs": np.array([[1.0], [2.0], [3.0]])}, {"lower": False, "adjoint": True}),
    ("solve_broadcast", "MatrixTriangularSolve", {
        "matrix": np.stack([_f32([[2, 0], [1, 3]]), _f32([[1, 0], [4, 2]])]),
        "rhs": _f32([[1], [2]])}, {}),
    ("solve_singular", "MatrixTriangularSolve", {"matrix": _f32([[0, 0], [1, 3]]),
                                                 "rhs": _f32([[1], [2]])}, {}),
    ("solve_rank", "MatrixTriangularSolve", {"matrix": _f32([1, 2]), "rhs": _f32([[1], [2]])},
     {}),
    ("solve_rhs_rank", "MatrixTriangularSolve", {"matrix": _f32([[2, 0], [1, 3]]),
                                                 "rhs": _f32([1, 2])}, {}),
    ("solve_square", "MatrixTriangularSolve", {"matrix": np.ones((2, 3), np.float32),
                                               "rhs": _f32([[1], [2]])}, {}),
    ("solve_rows", "MatrixTriangularSolve", {"matrix": _f32([[2, 0], [1, 3]]),
                                             "rhs": np.ones((3, 1), np.float32)},
     {"adjoint": True}),
    ("solve_batch", "MatrixTriangularSolve", {"matrix": np.ones((2, 2, 2), np.float32),
                                              "rhs": np.ones((3, 2, 1), np.float32)}, {}),
]


def _kernel_message(text: str) -> str:
    """The kernel's own words out of a session error's text."""
    text = text.split("\n\t [[")[0]
    match = re.search(r"\nNode: '[^']*'\n(.*)$", text, re.S)
    return (match.group(1) if match else text).strip()


def write_kernel_cases(tf) -> None:
    """Each KERNEL_CASES entry run in a Session on placeholders of unknown shape (so the
    kernel, not shape inference, checks): its outputs, or its error's class and message."""
    results, arrays = {}, {}
    for cid, op, inputs, attrs in KERNEL_CASES:
        graph = tf.Graph()
        with graph.as_default():
            feeds = {name: tf.placeholder(tf.as_dtype(value.dtype), None, name=name)
                     for name, value in inputs.items()}
            outs = getattr(tf.raw_ops, op)(**feeds, **attrs)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        for name, value in inputs.items():
            arrays[f"{cid}/{name}"] = value
        entry = {"op": op, "attrs": attrs, "inputs": list(inputs)}
        try:
            with tf.Session(graph=graph) as sess:
                values = sess.run(outs, {feeds[n]: v for n, v in inputs.items()})
        except tf.errors.OpError as e:
            entry.update(error=type(e).__name__, message=_kernel_message(e.message))
        else:
            for i, value in enumerate(values):
                arrays[f"{cid}/out{i}"] = value
            entry["outputs"] = len(values)
        results[cid] = entry
    np.savez(OUT / "kernel_cases.npz", **arrays)
    (OUT / "kernel_cases.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def write_mlp_meta_graph(tf) -> dict:
    graph = tf.Graph()
    rng = np.random.default_rng(7)
    w1 = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    x_value = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    labels_value = np.array([0, 1, 1, 0, 1], np.int32)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        v1 = tf.get_variable("w1", initializer=tf.constant(w1))
        b1 = tf.get_variable("b1", [4], initializer=tf.zeros_initializer())
        v2 = tf.get_variable("w2", initializer=tf.constant(w2))
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, v1), b1))
        logits = tf.matmul(h, v2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        opt = tf.train.GradientDescentOptimizer(0.1)
        grads_and_vars = opt.compute_gradients(loss)
        train = opt.apply_gradients(grads_and_vars, name="train")
        init = tf.global_variables_initializer()
        grad_names = [g.name for g, _ in grads_and_vars]
        meta = tf.train.export_meta_graph()
        with tf.Session() as sess:
            sess.run(init)
            feeds = {x: x_value, labels: labels_value}
            values = sess.run([g for g, _ in grads_and_vars], feeds)
            sess.run(train, feeds)
            after = sess.run([v1, b1, v2])
    (OUT / "mlp_meta_graph.pb").write_bytes(meta.SerializeToString())
    np.savez(OUT / "mlp_meta_graph.npz", x=x_value, labels=labels_value,
             **{f"grad_{i}": v for i, v in enumerate(values)},
             **{f"after_{i}": v for i, v in enumerate(after)})
    return {"grad_names": grad_names, "init": init.name, "train": train.name,
            "loss": loss.name}


def write_cnn_adam_meta_graph(tf) -> dict:
    """A small conv net on resource variables trained with Adam."""
    graph = tf.Graph()
    rng = np.random.default_rng(11)
    x_value = rng.uniform(-1, 1, (4, 6, 6, 2)).astype(np.float32)
    labels_value = np.array([0, 2, 1, 2], np.int32)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        f = tf.get_variable("conv_f", initializer=tf.constant(
            rng.normal(0, 0.3, (3, 3, 2, 4)).astype(np.float32)), use_resource=True)
        w = tf.get_variable("dense_w", initializer=tf.constant(
            rng.normal(0, 0.3, (36, 3)).astype(np.float32)), use_resource=True)
        h = tf.nn.relu(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"))
        h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        logits = tf.matmul(tf.reshape(h, [-1, 36]), w)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        opt = tf.train.AdamOptimizer(0.01)
        grads_and_vars = opt.compute_gradients(loss)
        train = opt.apply_gradients(grads_and_vars, name="train")
        init = tf.global_variables_initializer()
        meta = tf.train.export_meta_graph()
        with tf.Session() as sess:
            sess.run(init)
            feeds = {x: x_value, labels: labels_value}
            values = sess.run([g for g, _ in grads_and_vars], feeds)
            for _ in range(2):
                sess.run(train, feeds)
            after = sess.run([f, w])
    (OUT / "cnn_adam_meta_graph.pb").write_bytes(meta.SerializeToString())
    np.savez(OUT / "cnn_adam_meta_graph.npz", x=x_value, labels=labels_value,
             **{f"grad_{i}": v for i, v in enumerate(values)},
             **{f"after_{i}": v for i, v in enumerate(after)})
    return {"grad_names": [g.name for g, _ in grads_and_vars], "init": init.name,
            "train": train.name, "variables": ["conv_f", "dense_w"]}


def main(only: list[str]) -> None:
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    OUT.mkdir(exist_ok=True)
    if not only or any(name.startswith(("function_call", "functional_")) for name in only):
        write_forward_graphs(tf)
    index = write_programs(tf, only)
    write_op_defs()
    write_kernel_cases(tf)
    if only:
        full = json.loads((OUT / "index.json").read_text())
        full["programs"].update(index)
    else:
        full = {"programs": index, "mlp_meta_graph": write_mlp_meta_graph(tf),
                "cnn_adam_meta_graph": write_cnn_adam_meta_graph(tf)}
    (OUT / "index.json").write_text(json.dumps(full, indent=1, sort_keys=True) + "\n")
    print(f"{len(index)} programs")


if __name__ == "__main__":
    main(sys.argv[1:])
