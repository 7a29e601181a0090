"""Writes sync_replicas_tf.json: what TF 2.21 (tf.compat.v1, TF 1 behaviour) answers for
the conditional accumulators and SyncReplicasOptimizer: the accumulator ops' OpDefs, their
values and errors, the nodes SyncReplicasOptimizer builds, a 2-worker synchronous step
schedule on a ps/worker cluster (real TF servers of this process), and the plain
gradient-descent trajectory a 2-worker MonitoredTrainingSession with identical data
must stay on (checked here against TF's own MonitoredTrainingSession run).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_sync_replicas_tf.py

The programs take the TF-1-like module (``tf.compat.v1`` here, ``aioflow.compat.v1`` in
tests/test_sync_replicas.py) and a cluster harness (make_cluster_fixtures_tf's); this
module does not import TensorFlow at import time."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
JOBS = {"ps": 1, "worker": 2}
OPS = ["ConditionalAccumulator", "AccumulatorApplyGradient", "AccumulatorTakeGradient",
       "AccumulatorNumAccumulated", "AccumulatorSetGlobalStep",
       "ResourceConditionalAccumulator", "ResourceAccumulatorApplyGradient",
       "ResourceAccumulatorTakeGradient", "ResourceAccumulatorNumAccumulated",
       "ResourceAccumulatorSetGlobalStep", "SparseConditionalAccumulator",
       "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient"]
#: Each worker's batch (x, y) in the schedule program; the MLP's initial weights.
X = np.array([[[1.0, 2.0, -1.0], [0.5, -1.0, 2.0]], [[-2.0, 1.0, 0.0], [1.0, 1.0, 1.0]]],
             np.float32)
Y = np.array([[[1.0], [-1.0]], [[0.5], [2.0]]], np.float32)
W1 = np.array([[0.1, -0.2, 0.3, 0.4], [0.5, 0.1, -0.3, 0.2], [-0.1, 0.2, 0.1, -0.4]],
              np.float32)
W2 = np.array([[0.3], [-0.5], [0.2], [0.1]], np.float32)
LR = 0.1
MTS_STEPS = 4


def _error(tf, fn) -> list:
    """[class, the kernel's message] of the error `fn` raises ([None, None]: none): the
    line before the first naming the node ("[[{{node ...}}]]")."""
    try:
        fn()
    except tf.errors.OpError as e:
        lines = [line.strip() for line in e.message.splitlines()]
        at = next(i for i, line in enumerate(lines) if line.startswith("[["))
        return [type(e).__name__, lines[at - 1]]
    return [None, None]


def program_accumulators(tf) -> dict:
    """Dense and sparse accumulators: means, sums, stale gradients, the global step and
    TF's errors."""
    g = tf.Graph()
    out = {}
    with g.as_default():
        step = tf.placeholder(tf.int64, [], name="step")
        grad = tf.placeholder(tf.float32, None, name="grad")
        acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="a")
        apply_op = acc.apply_grad(grad, local_step=step)
        count = acc.num_accumulated()
        take2, take0 = acc.take_grad(2), acc.take_grad(0)
        set_step = acc.set_global_step(step)
        total = tf.ConditionalAccumulator(tf.float32, shape=[None, 2], reduction_type="SUM",
                                          name="total")
        total_apply, total_take = total.apply_grad(grad, local_step=step), total.take_grad(1)
        sparse = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2])
        idx = tf.placeholder(tf.int64, None, name="idx")
        val = tf.placeholder(tf.float32, None, name="val")
        shape = tf.placeholder(tf.int64, [None], name="shape")
        sparse_apply = sparse.apply_grad(idx, val, shape, local_step=step)
        sparse_count = sparse.num_accumulated()
        sparse_take = sparse.take_grad(2)
        sparse_take1 = sparse.take_grad(1)
        sparse_set = sparse.set_global_step(step)
        unshaped = tf.SparseConditionalAccumulator(tf.float32, name="unshaped")
        unshaped_apply = unshaped.apply_grad(idx, val, local_step=step)
        unshaped_take = unshaped.take_grad(1)
        out["graph"] = [[n.name, n.op] for n in g.as_graph_def().node]
        with tf.Session(graph=g) as sess:
            sess.run(apply_op, {grad: [1.0, 2.0], step: 0})
            sess.run(apply_op, {grad: [3.0, 5.0], step: 3})
            out["count"] = int(sess.run(count))
            out["mean"] = sess.run(take2).tolist()
            sess.run(apply_op, {grad: [1.0, 1.0], step: 0})
            out["stale_count"] = int(sess.run(count))
            out["bad_shape"] = _error(tf, lambda: sess.run(apply_op, {grad: [1.0, 2.0, 3.0],
                                                                      step: 1}))
            out["stale_bad_shape_dropped"] = _error(
                tf, lambda: sess.run(apply_op, {grad: [1.0, 2.0, 3.0], step: 0}))
            out["num_required_0"] = _error(tf, lambda: sess.run(take0))
            sess.run(set_step, {step: 0})
            sess.run(apply_op, {grad: [4.0, 4.0], step: 0})
            out["after_set_back"] = int(sess.run(count))
            sess.run(set_step, {step: 5})
            sess.run(apply_op, {grad: [4.0, 4.0], step: 4})
            out["after_set_forward"] = int(sess.run(count))
            sess.run(total_apply, {grad: [[1.0, 2.0]], step: 0})
            out["mismatch_accumulated"] = _error(
                tf, lambda: sess.run(total_apply, {grad: [[1.0, 2.0], [3.0, 4.0]], step: 0}))
            sess.run(total_apply, {grad: [[0.5, 0.25]], step: 0})
            out["sum"] = sess.run(total_take).tolist()
            pairs = [([2, 0], [[1.0, 1.0], [2.0, 2.0]]), ([0, 3], [[4.0, 4.0], [6.0, 6.0]])]
            for i, v in pairs:
                sess.run(sparse_apply, {idx: i, val: v, shape: [4, 2], step: 0})
            out["sparse_unsorted"] = [a.tolist() for a in sess.run(sparse_take)]
            for i, v in [([0, 2], [[1.0, 1.0], [2.0, 2.0]]), ([0, 3], [[4.0, 4.0], [6.0, 6.0]])]:
                sess.run(sparse_apply, {idx: i, val: v, shape: [4, 2], step: 1})
            out["sparse_count"] = int(sess.run(sparse_count))
            out["sparse_mean"] = [a.tolist() for a in sess.run(sparse_take)]
            cases = {"index_out": ([5], [[1.0, 1.0]], [4, 2]),
                     "dim_mismatch": ([1], [[1.0, 1.0]], [3, 2]),
                     "rank_short": ([1], [[1.0, 1.0]], [4]),
                     "values_dim": ([1], [[1.0, 1.0, 1.0]], [4, 3]),
                     "values_rows": ([1, 2], [[1.0, 1.0]], [4, 2]),
                     "values_scalar": ([1], 1.0, [4, 2]),
                     "indices_matrix": ([[1]], [[1.0, 1.0]], [4, 2])}
            for name, (i, v, s) in cases.items():
                out[f"sparse_{name}"] = _error(tf, lambda i=i, v=v, s=s: sess.run(
                    sparse_apply, {idx: np.array(i), val: v, shape: s, step: 2}))
            sess.run(sparse_apply, {idx: [1], val: [[1.0, 1.0]], shape: [4, 2], step: 2})
            out["sparse_accumulated_dim"] = _error(tf, lambda: sess.run(
                sparse_apply, {idx: [2], val: [[1.0, 1.0, 1.0]], shape: [4, 2], step: 2}))
            out["sparse_accumulated_rank"] = _error(tf, lambda: sess.run(
                sparse_apply, {idx: [2], val: [1.0], shape: [4, 2], step: 2}))
            out["sparse_one"] = [a.tolist() for a in sess.run(sparse_take1)]
            sess.run(sparse_set, {step: 0})
            out["sparse_count_after_set"] = int(sess.run(sparse_count))
            sess.run(unshaped_apply, {idx: [4, 1], val: [[[1.0]], [[2.0]]], step: 0})
            out["unshaped"] = [a.tolist() for a in sess.run(unshaped_take)]
    return out


def build_worker(tf, cluster, task: int):
    """Worker `task`'s graph (between-graph replication): the MLP on the ps, a
    SyncReplicasOptimizer over 2 replicas; (graph, feeds, ops)."""
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster.spec)):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            w1 = tf.Variable(W1, name="w1")
            b1 = tf.Variable(np.zeros(4, np.float32), name="b1")
            w2 = tf.Variable(W2, name="w2")
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y), name="loss")
            global_step = tf.train.get_or_create_global_step()
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR),
                                                 replicas_to_aggregate=2,
                                                 total_num_replicas=2)
            train_op = opt.minimize(loss, global_step=global_step)
    return g, {"x": x, "y": y}, {"opt": opt, "train": train_op, "step": global_step,
                                 "weights": [w1, b1, w2], "loss": loss}


def program_two_workers(tf, cluster) -> dict:
    """Two workers and the chief's sync op, in a fixed order: both apply at step 0 and
    the sync averages them; the next round's gradients are stale (dropped) and only
    move the local steps; in the third both apply at step 1 (each waits for a token
    until the sync has run)."""
    built = [build_worker(tf, cluster, task) for task in (0, 1)]
    sessions = [tf.Session(cluster.target("worker", t), graph=built[t][0]) for t in (0, 1)]
    out = {}
    (g0, _, ops0), (g1, _, ops1) = built
    opt0 = ops0["opt"]
    with g0.as_default():
        init, local_init = tf.global_variables_initializer(), tf.local_variables_initializer()
        init_tokens = opt0.get_init_tokens_op()
        sync_op = opt0.get_chief_queue_runner().enqueue_ops[0]
    with g1.as_default():
        local_init1 = tf.local_variables_initializer()
    s0, s1 = sessions
    s0.run([init, local_init])
    s0.run(opt0.chief_init_op)
    s0.run(init_tokens)
    s1.run(local_init1)
    s1.run(ops1["opt"].local_step_init_op)

    def train(t):
        _, feeds, ops = built[t]
        return sessions[t].run(ops["train"], {feeds["x"]: X[t], feeds["y"]: Y[t]})

    def weights():
        return [w.tolist() for w in s0.run(ops0["weights"])]

    out["local_steps_0"] = [int(train(0)), int(train(1))]
    s0.run(sync_op)
    out["round_1"] = {"weights": weights(), "step": int(s0.run(ops0["step"]))}
    out["local_steps_1"] = [int(train(0)), int(train(1))]
    out["round_2_weights_unchanged"] = weights() == out["round_1"]["weights"]
    results = {}
    threads = [threading.Thread(target=lambda t=t: results.__setitem__(t, train(t)))
               for t in (0, 1)]
    for thread in threads:
        thread.start()
    s0.run(sync_op)
    for thread in threads:
        thread.join()
    out["local_steps_2"] = [int(results[0]), int(results[1])]
    out["round_3"] = {"weights": weights(), "step": int(s0.run(ops0["step"]))}
    for sess in sessions:
        sess.close()
    return out


def program_graph(tf, cluster) -> dict:
    """The nodes SyncReplicasOptimizer adds to worker 1's graph: accumulators, token
    queue, local step, init ops (name, op, device)."""
    g, _, ops = build_worker(tf, cluster, 1)
    with g.as_default():
        ops["opt"].get_init_tokens_op()
    keep = ("sync_replicas", "sync_token_q", "sync_rep_local_step", "SetGlobalStep",
            "Fill", "group_deps", "report_uninitialized", "NoOp")
    return {"nodes": sorted([n.name, n.op, n.device] for n in g.as_graph_def().node
                            if n.name.startswith(keep) or "Accumulator" in n.op)}


def gd_trajectory(tf, steps: int) -> list:
    """Plain gradient descent on both workers' batch X[0] (what sync replicas of
    identical data do): [w1, b1, w2] after 0..steps steps."""
    g = tf.Graph()
    with g.as_default():
        x, y = tf.constant(X[0]), tf.constant(Y[0])
        w1 = tf.Variable(W1, name="w1")
        b1 = tf.Variable(np.zeros(4, np.float32), name="b1")
        w2 = tf.Variable(W2, name="w2")
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) - y))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        with tf.Session(graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            out = [[w.tolist() for w in sess.run([w1, b1, w2])]]
            for _ in range(steps):
                sess.run(train)
                out.append([w.tolist() for w in sess.run([w1, b1, w2])])
    return out


def run_monitored(tf, cluster) -> dict:
    """Chief and non-chief MonitoredTrainingSessions (master=each worker's target) with
    the optimizer's hook and StopAtStepHook, in two threads, both feeding X[0]; the
    non-chief starts once the chief's session is up. {"step", "weights"} at the end."""
    chief_up = threading.Event()
    errors = []

    class Up(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):
            chief_up.set()

    def worker(task):
        try:
            g, feeds, ops = build_worker(tf, cluster, task)
            with g.as_default():
                hooks = [ops["opt"].make_session_run_hook(task == 0),
                         tf.train.StopAtStepHook(last_step=MTS_STEPS)]
                if task == 0:
                    hooks.append(Up())
                else:
                    chief_up.wait(60)
                with tf.train.MonitoredTrainingSession(
                        master=cluster.target("worker", task), is_chief=task == 0,
                        hooks=hooks, stop_grace_period_secs=1) as sess:
                    while not sess.should_stop():
                        sess.run(ops["train"], {feeds["x"]: X[0], feeds["y"]: Y[0]})
        except Exception as e:  # reported by the caller
            errors.append(e)
            chief_up.set()

    threads = [threading.Thread(target=worker, args=(t,)) for t in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    if errors:
        raise errors[0]
    g, _, ops = build_worker(tf, cluster, 0)
    with tf.Session(cluster.target("worker", 0), graph=g) as sess:
        step, weights = sess.run([ops["step"], ops["weights"]])
    return {"step": int(step), "weights": [w.tolist() for w in weights]}


def main() -> None:
    import tensorflow as tf1
    from make_cluster_fixtures_tf import TFCluster
    from tensorflow.python.framework import op_def_registry

    tf = tf1.compat.v1
    tf.disable_v2_behavior()  # TF 1: ref variables, v1 control flow
    out = {"tensorflow": tf1.__version__,
           "opdefs": {n: op_def_registry.get(n).SerializeToString().hex() for n in OPS},
           "accumulators": program_accumulators(tf),
           "two_workers": program_two_workers(tf, TFCluster(tf, JOBS)),
           "graph": program_graph(tf, TFCluster(tf, JOBS)),
           "trajectory": gd_trajectory(tf, MTS_STEPS + 3)}
    monitored = run_monitored(tf, TFCluster(tf, JOBS))
    expected = out["trajectory"][monitored["step"]]
    assert monitored["step"] >= MTS_STEPS, monitored
    np.testing.assert_allclose(np.concatenate([np.ravel(w) for w in monitored["weights"]]),
                               np.concatenate([np.ravel(w) for w in expected]), rtol=1e-5)
    out["monitored_tf"] = monitored
    for key, value in out.items():
        if key != "opdefs":
            print(key, value, file=sys.stderr)
    (HERE / "sync_replicas_tf.json").write_text(json.dumps(out, indent=1, sort_keys=True)
                                                + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
