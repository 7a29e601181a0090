"""Make the function-library fixtures with TensorFlow 2.21 (run with a Python that has
tensorflow-cpu; TF is never a dependency of aioflow):

    /path/to/tf-venv/bin/python tests/data/make_function_fixtures.py [name ...]

Each fixture is a TF 2-era graph built in tf.compat.v1 graph mode with control flow v2
(If/While/Case functional ops and tf.function calls, their functions in GraphDef.library):
`fn_<name>.pb` (the GraphDef) and `fn_<name>.npz` (`feed:<name>` inputs, `fetch:<name>`
TF's outputs; for a stateful fixture, the outputs of each of several runs as
`fetch:<name>:<run>`). function_fixtures.json lists each fixture's feeds, fetches, init
targets and number of runs. Also function_op_defs.pb: TF's OpDefs of the functional
ops (an OpList), which tests/test_functions_op_defs.py compares field by field.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import op_def_pb2  # noqa: E402
from tensorflow.python.framework import op_def_registry  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
v1 = tf.compat.v1
MANIFEST: dict = {}

OP_NAMES = ["PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "While",
            "StatelessWhile", "Case", "StatelessCase", "_DeviceArg", "_DeviceRetval",
            "DisableCopyOnRead", "EnsureShape", "_SwitchN"]


def save(name: str, graph: tf.Graph, feeds: dict, fetches: list, init=None,
         runs: int = 1) -> None:
    """Run `fetches` in TF (after `init`, `runs` times) and write the fixture."""
    arrays = {}
    with v1.Session(graph=graph) as sess:
        if init is not None:
            sess.run(init)
        feed_dict = {graph.get_tensor_by_name(k): v for k, v in feeds.items()}
        for run in range(runs):
            values = sess.run(fetches, feed_dict)
            for tensor, value in zip(fetches, values, strict=True):
                key = f"fetch:{tensor.name}" + (f":{run}" if runs > 1 else "")
                arrays[key] = np.asarray(value)
    for key, value in feeds.items():
        arrays[f"feed:{key}"] = np.asarray(value)
    graph_def = graph.as_graph_def()
    assert graph_def.library.function, f"{name}: no function library"
    with open(os.path.join(HERE, f"fn_{name}.pb"), "wb") as f:
        f.write(graph_def.SerializeToString())
    np.savez(os.path.join(HERE, f"fn_{name}.npz"), **arrays)
    MANIFEST[name] = {"feeds": sorted(feeds), "fetches": [t.name for t in fetches],
                      "init": [init.name] if init is not None else [], "runs": runs,
                      "ops": sorted({n.op for n in graph_def.node})}


def nested_calls() -> None:
    """tf.functions calling tf.functions; `inner_noinline` is marked _noinline."""
    graph = tf.Graph()
    with graph.as_default():
        @tf.function(autograph=False)
        def leaf(x):
            return tf.sin(x) * 2.0

        @tf.function(autograph=False, experimental_attributes={"_noinline": True})
        def inner_noinline(x, y):
            return leaf(x) + tf.reduce_sum(y), y * 3.0

        @tf.function(autograph=False)
        def outer(x, y):
            a, b = inner_noinline(x, y)
            return leaf(a) - b[0], tf.cast(tf.shape(b)[0], tf.float32)

        x = v1.placeholder(tf.float32, [3], name="x")
        y = v1.placeholder(tf.float32, [2], name="y")
        r1, r2 = outer(x, y)
        out1 = tf.identity(r1, name="out1")
        out2 = tf.identity(r2, name="out2")
    save("nested_calls", graph, {"x:0": np.array([0.1, 0.5, 2.0], np.float32),
                                 "y:0": np.array([1.5, -0.25], np.float32)},
         [out1, out2])


def if_in_while() -> None:
    """A v2 while loop whose body holds a v2 cond (the Collatz step)."""
    graph = tf.Graph()
    with graph.as_default():
        n = v1.placeholder(tf.int32, [], name="n")

        def body(i, x, steps):
            x = tf.cond(tf.equal(x % 2, 0), lambda: x // 2, lambda: 3 * x + 1)
            return i + 1, x, steps + tf.cast(tf.equal(x, 1), tf.int32)

        out = tf.while_loop(lambda i, x, s: tf.logical_and(i < 50, x > 1), body,
                            [tf.constant(0), n, tf.constant(0)])
        outs = [tf.identity(t, name=f"out{k}") for k, t in enumerate(out)]
    save("if_in_while", graph, {"n:0": np.array(27, np.int32)}, outs)


def while_in_if() -> None:
    """A v2 cond whose then branch runs a v2 while loop, nested in another loop."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [2], name="x")
        p = v1.placeholder(tf.bool, [], name="p")

        def then():
            _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, y * 1.5 + 1.0),
                                 [tf.constant(0), x])
            return y

        out = tf.cond(p, then, lambda: x - 1.0)
        out = tf.identity(out, name="out")
    save("while_in_if", graph, {"x:0": np.array([1.0, -2.0], np.float32),
                                "p:0": np.array(True)}, [out])
    save("while_in_if_false", graph, {"x:0": np.array([1.0, -2.0], np.float32),
                                      "p:0": np.array(False)}, [out])


def tensor_list_while() -> None:
    """A TensorArray written and read in a v2 while loop (TensorList ops in the body)."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [4, 3], name="x")
        ta_in = tf.TensorArray(tf.float32, size=4).unstack(x)
        ta_out = tf.TensorArray(tf.float32, size=0, dynamic_size=True)

        def body(i, acc, ta):
            row = ta_in.read(i)
            acc = acc + row
            return i + 1, acc, ta.write(i, acc * tf.cast(i + 1, tf.float32))

        _, acc, ta = tf.while_loop(lambda i, a, t: i < 4, body,
                                   [tf.constant(0), tf.zeros([3]), ta_out])
        stacked = tf.identity(ta.stack(), name="stacked")
        acc = tf.identity(acc, name="acc")
    save("tensor_list_while", graph,
         {"x:0": np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0}, [stacked, acc])


def stateful_call() -> None:
    """A tf.function updating a resource variable (StatefulPartitionedCall), run 3 times."""
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")

        @tf.function(autograph=False)
        def update(x):
            v.assign_add(x * 2.0)
            return v.read_value() * 10.0

        x = v1.placeholder(tf.float32, [2], name="x")
        out = tf.identity(update(x), name="out")
        init = v1.global_variables_initializer()
    save("stateful_call", graph, {"x:0": np.array([0.5, -1.0], np.float32)}, [out],
         init=init, runs=3)


def resource_while() -> None:
    """A v2 while loop whose body reads one resource variable and updates another (both
    handles are loop variables passed through unchanged), run 3 times; with TF's lowered
    partition graph (grappler off, so that only LowerFunctionalOpsPass shaped the loop):
    per Enter its type and is_constant, and the types of its Merge/Switch/Exit/
    NextIteration nodes, recorded as `tf_lowered` in the manifest."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="w")
        c = tf.Variable(np.zeros(3, np.float32), name="c")
        x = v1.placeholder(tf.float32, [3], name="x")
        n = v1.placeholder(tf.int32, [], name="n")

        def body(i, acc):
            # v1 graph mode adds no automatic control dependencies to a while_v2 body:
            # without this one TF's lowering prunes the update (it feeds no result)
            with tf.control_dependencies([c.assign_add(acc)]):
                return i + 1, acc * w.read_value() + x + c.read_value()

        _, acc = tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), tf.zeros([3])])
        out = tf.identity(acc, name="out")
        with tf.control_dependencies([out]):
            c_after = tf.identity(c.read_value(), name="c_after")
        init = v1.global_variables_initializer()
    feeds = {"x:0": np.array([1.0, 0.25, -0.5], np.float32), "n:0": np.array(3, np.int32)}
    save("resource_while", graph, feeds, [out, c_after], init=init, runs=3)
    config = v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with v1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        metadata = v1.RunMetadata()
        sess.run(out, {graph.get_tensor_by_name(k): v for k, v in feeds.items()},
                 options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    (part,) = metadata.partition_graphs
    type_name = lambda t: tf.dtypes.as_dtype(t).name  # noqa: E731
    MANIFEST["resource_while"]["tf_lowered"] = {
        "enters": sorted([type_name(nd.attr["T"].type), nd.attr["is_constant"].b]
                         for nd in part.node if nd.op == "Enter"),
        **{op: sorted(type_name(nd.attr["T"].type) for nd in part.node if nd.op == op)
           for op in ("Merge", "Switch", "Exit", "NextIteration")}}


def case() -> None:
    """tf.switch_case (Case), also with an index out of range (the default branch)."""
    graph = tf.Graph()
    with graph.as_default():
        i = v1.placeholder(tf.int32, [], name="i")
        x = v1.placeholder(tf.float32, [3], name="x")
        out = tf.switch_case(i, [lambda: x * 2.0, lambda: tf.exp(x), lambda: -x])
        out = tf.identity(out, name="out")
    xs = np.array([0.0, 1.0, -0.5], np.float32)
    for k in (0, 1, 2, 7):
        save(f"case_{k}", graph, {"i:0": np.array(k, np.int32), "x:0": xs}, [out])


def while_counter() -> None:
    """A v2 while loop of many iterations (the benchmark's shape, small here)."""
    graph = tf.Graph()
    with graph.as_default():
        n = v1.placeholder(tf.int32, [], name="n")
        _, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + 0.5 * a / (a + 1.0)),
                               [tf.constant(0), tf.constant(1.0)], parallel_iterations=1)
        out = tf.identity(acc, name="out")
    save("while_counter", graph, {"n:0": np.array(200, np.int32)}, [out])


def keras_rnn(kind: str) -> None:
    """A Keras LSTM/GRU layer frozen with its While v2 kept (convert_variables_to_
    constants_v2, lower_control_flow=False): TensorList ops in the loop body."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    tf.keras.utils.set_random_seed(7)
    layer_cls = tf.keras.layers.LSTM if kind == "lstm" else tf.keras.layers.GRU
    layer = layer_cls(5, return_sequences=True)
    spec = tf.TensorSpec([2, 6, 3], tf.float32, name="x")
    concrete = tf.function(lambda x: layer(x)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    graph_def = frozen.graph.as_graph_def()
    x = np.random.RandomState(3).randn(2, 6, 3).astype(np.float32)
    want = frozen(tf.constant(x))
    want = want[0] if isinstance(want, (list, tuple)) else want
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    fetch = graph.get_tensor_by_name(frozen.outputs[0].name)
    feed = frozen.inputs[0].name
    save(f"keras_{kind}", graph, {feed: x}, [fetch])
    np.testing.assert_allclose(np.load(os.path.join(HERE, f"fn_keras_{kind}.npz"))[
        f"fetch:{fetch.name}"], want.numpy(), rtol=1e-5, atol=1e-6)


def ensure_shape() -> None:
    """tf.ensure_shape inside a tf.function (EnsureShape in the body)."""
    graph = tf.Graph()
    with graph.as_default():
        @tf.function(autograph=False)
        def checked(v):
            return tf.reduce_sum(tf.ensure_shape(v, [2, None]), axis=0)

        x = v1.placeholder(tf.float32, [None, None], name="x")
        out = tf.identity(checked(x), name="out")
    save("ensure_shape", graph, {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3)}, [out])


def defun_call() -> None:
    """TF 1's function.Defun: nodes whose op is the function's name (direct calls)."""
    from tensorflow.python.framework import function

    graph = tf.Graph()
    with graph.as_default():
        @function.Defun(tf.float32, tf.float32)
        def scaled_sum(a, b):
            return a * 2.0 + b, a - b

        x = v1.placeholder(tf.float32, [3], name="x")
        y = v1.placeholder(tf.float32, [3], name="y")
        s, d = scaled_sum(x, y)
        out = tf.identity(s * d, name="out")
    save("defun_call", graph, {"x:0": np.array([1.0, 2.0, 3.0], np.float32),
                               "y:0": np.array([0.5, -1.0, 4.0], np.float32)}, [out])


def op_defs() -> None:
    ops = op_def_pb2.OpList()
    for name in OP_NAMES:
        ops.op.add().CopyFrom(op_def_registry.get(name))
    with open(os.path.join(HERE, "function_op_defs.pb"), "wb") as f:
        f.write(ops.SerializeToString())


def main(names: list[str]) -> None:
    """Make every fixture, or only those named (then the manifest is updated)."""
    v1.enable_control_flow_v2()
    if names:
        with open(os.path.join(HERE, "function_fixtures.json")) as f:
            MANIFEST.update(json.load(f))
        for name in names:
            globals()[name]()
    else:
        make_all()
    with open(os.path.join(HERE, "function_fixtures.json"), "w") as f:
        json.dump(MANIFEST, f, indent=1, sort_keys=True)
        f.write("\n")


def make_all() -> None:
    nested_calls()
    if_in_while()
    while_in_if()
    tensor_list_while()
    stateful_call()
    case()
    while_counter()
    ensure_shape()
    defun_call()
    op_defs()
    keras_rnn("lstm")
    keras_rnn("gru")
    resource_while()


if __name__ == "__main__":
    main(sys.argv[1:])
