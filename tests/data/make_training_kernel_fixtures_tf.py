"""Writes the optimizer-kernel fixtures: TF 2.21's OpDefs of the Apply* ops
(training_op_defs.pb) and, for each case, a variable and its slots updated by one op over
several steps in a v1 session (training_kernels.npz: initial values, grads, indices, and
every variable after each step; training_kernels.json: the op, attrs, hyper-parameters,
dtype, steps), plus the errors TF raises on bad input (class and message).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_training_kernel_fixtures_tf.py

The same cases run in tests/test_training_kernels.py on graphs aioflow builds. Inputs are
drawn from a fixed NumPy seed, so the output is deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from tf_error_text import error_record

HERE = Path(__file__).resolve().parent
STEPS = 3

# op family -> (number of variables, hyper-parameters in input order with their values)
FAMILIES = {
    "GradientDescent": (1, {"alpha": 0.1}),
    "ProximalGradientDescent": (1, {"alpha": 0.1, "l1": 0.05, "l2": 0.02}),
    "Adadelta": (3, {"lr": 1.0, "rho": 0.95, "epsilon": 1e-6}),
    "Adagrad": (2, {"lr": 0.1}),
    "AdagradV2": (2, {"lr": 0.1, "epsilon": 1e-7}),
    "ProximalAdagrad": (2, {"lr": 0.1, "l1": 0.05, "l2": 0.02}),
    "AdagradDA": (3, {"lr": 0.1, "l1": 0.01, "l2": 0.02, "global_step": 3}),
    "Ftrl": (3, {"lr": 0.1, "l1": 0.05, "l2": 0.02, "lr_power": -0.5}),
    "FtrlV2": (3, {"lr": 0.1, "l1": 0.05, "l2": 0.02, "l2_shrinkage": 0.01,
                   "lr_power": -0.5}),
    "Momentum": (2, {"lr": 0.1, "momentum": 0.9}),
    "KerasMomentum": (2, {"lr": 0.1, "momentum": 0.9}),
    "Adam": (3, {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9,
                 "beta2": 0.999, "epsilon": 1e-8}),
    "AdamWithAmsgrad": (4, {"beta1_power": 0.81, "beta2_power": 0.998, "lr": 0.01,
                            "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}),
    "AdaMax": (3, {"beta1_power": 0.9, "lr": 0.01, "beta1": 0.9, "beta2": 0.999,
                   "epsilon": 1e-8}),
    "RMSProp": (3, {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-10}),
    "CenteredRMSProp": (4, {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-10}),
    "AddSign": (2, {"lr": 0.1, "alpha": 1.0, "sign_decay": 0.5, "beta": 0.9}),
    "PowerSign": (2, {"lr": 0.1, "logbase": 0.7, "sign_decay": 0.5, "beta": 0.9}),
}
DENSE_ONLY = {"GradientDescent", "Adam", "AdamWithAmsgrad", "AdaMax", "AddSign", "PowerSign"}
RESOURCE_ONLY = {"KerasMomentum", "AdamWithAmsgrad"}


def op_names() -> list[str]:
    names = []
    for family in FAMILIES:
        prefixes = ["Apply"] + ([] if family in DENSE_ONLY else ["SparseApply"])
        for prefix in prefixes:
            if family not in RESOURCE_ONLY:
                names.append(prefix + family)
            names.append("Resource" + prefix + family)
    return names


def cases() -> list[dict]:
    """name, family, sparse, resource, dtype, var shape, indices, attrs, hyper overrides."""
    out = []

    def add(family, *, sparse=False, resource=False, dtype="float32", shape=(2, 3),
            indices=None, itype="int32", attrs=None, hyper=None, tag=""):
        kind = ("resource_" if resource else "") + ("sparse" if sparse else "dense")
        name = f"{family}_{kind}_{dtype}{tag}"
        out.append({"name": name, "family": family, "sparse": sparse, "resource": resource,
                    "dtype": dtype, "shape": list(shape), "indices": indices,
                    "itype": itype, "attrs": attrs or {}, "hyper": hyper or {}})

    for family in FAMILIES:
        ref_ok = family not in RESOURCE_ONLY
        for dtype in ("float32", "float64"):
            if ref_ok:
                add(family, dtype=dtype)
            add(family, resource=True, dtype=dtype)
        if family not in DENSE_ONLY:
            for resource in ((False, True) if ref_ok else (True,)):
                # rows 1 and 3 twice: duplicates apply in order
                add(family, sparse=True, resource=resource, shape=(5, 3),
                    indices=[3, 1, 3, 0, 1])
            add(family, sparse=True, resource=True, shape=(6,), indices=[4, 0, 4, 2],
                itype="int64", tag="_vector")
            add(family, sparse=True, resource=True, dtype="float64", shape=(4, 2),
                indices=[2, 2, 1], tag="")
    # branches of the update rules
    add("Momentum", attrs={"use_nesterov": True}, tag="_nesterov")
    add("Momentum", sparse=True, shape=(4, 2), indices=[1, 3, 1],
        attrs={"use_nesterov": True}, tag="_nesterov")
    add("KerasMomentum", resource=True, attrs={"use_nesterov": True}, tag="_nesterov")
    add("Adam", attrs={"use_nesterov": True}, tag="_nesterov")
    add("Adagrad", attrs={"update_slots": False}, tag="_no_update")
    add("Adagrad", sparse=True, shape=(4, 2), indices=[0, 2],
        attrs={"update_slots": False}, tag="_no_update")
    add("AdagradV2", sparse=True, shape=(4, 2), indices=[1, 1],
        attrs={"update_slots": False}, tag="_no_update")
    for family in ("ProximalGradientDescent", "ProximalAdagrad", "AdagradDA"):
        add(family, hyper={"l1": 0.0}, tag="_no_l1")
        add(family, sparse=True, shape=(4, 2), indices=[3, 0, 3], hyper={"l1": 0.0},
            tag="_no_l1")
        add(family, sparse=True, shape=(5,), indices=[1, 4], hyper={"l1": 0.0},
            tag="_vector_no_l1")
    for family in ("Ftrl", "FtrlV2"):
        add(family, hyper={"lr_power": -0.7}, tag="_power")
        add(family, attrs={"multiply_linear_by_lr": True}, tag="_by_lr")
        add(family, attrs={"multiply_linear_by_lr": True}, hyper={"lr_power": -0.7},
            tag="_by_lr_power")
        add(family, sparse=True, shape=(4, 2), indices=[2, 0, 2],
            hyper={"lr_power": -0.7}, tag="_power")
        add(family, sparse=True, shape=(4, 2), indices=[2, 0, 2],
            attrs={"multiply_linear_by_lr": True}, tag="_by_lr")
        add(family, sparse=True, shape=(5,), indices=[1, 3, 1],
            attrs={"multiply_linear_by_lr": True}, hyper={"lr_power": -0.7},
            tag="_vector_by_lr_power")
        add(family, hyper={"l1": 0.0, "l2": 0.0}, tag="_no_reg")
    for family in ("GradientDescent", "Momentum", "Adam", "RMSProp", "Adagrad"):
        add(family, dtype="float16", tag="")
    assert len({c["name"] for c in out}) == len(out)
    return out


def initial_values(rng, case: dict, var_names: list[str]) -> dict:
    shape = tuple(case["shape"])
    values = {}
    for i, name in enumerate(var_names):
        if i == 0 or name == "linear":
            v = rng.normal(size=shape)
        elif name == "mg":
            v = rng.uniform(-0.1, 0.1, size=shape)
        elif name in ("m", "gradient_accumulator", "mom", "accum") and \
                case["family"] in ("Adam", "AdamWithAmsgrad", "AdaMax", "Momentum",
                                   "KerasMomentum", "AdagradDA", "RMSProp",
                                   "CenteredRMSProp", "AddSign", "PowerSign"):
            v = rng.normal(scale=0.1, size=shape)
        else:
            v = rng.uniform(0.1, 1.0, size=shape)
        values[name] = v.astype(case["dtype"])
    return values


def grads(rng, case: dict) -> list[np.ndarray]:
    shape = tuple(case["shape"])
    if case["sparse"]:
        shape = (len(case["indices"]),) + shape[1:]
    return [rng.normal(size=shape).astype(case["dtype"]) for _ in range(STEPS)]


def run_case(tf, case: dict, rng) -> tuple[dict, dict]:
    """The case's arrays (inputs, and every variable after each step)."""
    v1 = tf.compat.v1
    prefix = ("Resource" if case["resource"] else "") + \
        ("SparseApply" if case["sparse"] else "Apply")
    op_name = prefix + case["family"]
    n_vars, hyper = FAMILIES[case["family"]]
    hyper = {**hyper, **case["hyper"]}
    from tensorflow.python.framework import op_def_registry
    op_def = op_def_registry.get(op_name)
    var_names = [a.name for a in op_def.input_arg[:n_vars]]
    init = initial_values(rng, case, var_names)
    gs = grads(rng, case)
    arrays = {f"init/{k}": v for k, v in init.items()}
    arrays.update({f"grad/{k}": g for k, g in enumerate(gs)})
    g = tf.Graph()
    with g.as_default():
        variables = {name: v1.Variable(value, name=name, use_resource=case["resource"])
                     for name, value in init.items()}
        grad = v1.placeholder(case["dtype"], gs[0].shape, name="grad")
        kwargs = dict(variables)
        if case["resource"]:
            kwargs = {k: v.handle for k, v in variables.items()}
        kwargs["grad" if "grad" in [a.name for a in op_def.input_arg] else "delta"] = grad
        for name, value in hyper.items():
            dtype = "int64" if name == "global_step" else case["dtype"]
            kwargs[name] = tf.constant(value, dtype=dtype, name=name)
        if case["sparse"]:
            kwargs["indices"] = tf.constant(case["indices"], dtype=case["itype"],
                                            name="indices")
        kwargs.update(case["attrs"])
        op = getattr(tf.raw_ops, op_name)(**kwargs, name="update")
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            for k, value in enumerate(gs):
                sess.run(op, {grad: value})
                after = sess.run({n: v.read_value() if case["resource"] else v
                                  for n, v in variables.items()})
                for name, value in after.items():
                    arrays[f"step{k}/{name}"] = value
    meta = {"op": op_name, "vars": var_names, "hyper": hyper, "attrs": case["attrs"],
            "dtype": case["dtype"], "indices": case["indices"], "itype": case["itype"],
            "shape": case["shape"], "steps": STEPS}
    return meta, arrays


def error_cases(tf) -> dict:
    """What TF answers to bad input: {"error": class name, "message": ...} by case."""
    v1 = tf.compat.v1
    out = {}

    def record(name, build):
        g = tf.Graph()
        with g.as_default():
            target, init = build()
            with v1.Session(graph=g) as sess:
                if init is not None:
                    sess.run(init)
                try:
                    sess.run(target)
                    out[name] = None
                except tf.errors.OpError as e:
                    out[name] = error_record(e)

    def uninit_slot():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=False)
        accum = v1.Variable([0.1, 0.1], name="accum", use_resource=False)
        op = tf.raw_ops.ApplyAdagrad(var=var, accum=accum, lr=0.1, grad=[1.0, 1.0],
                                     name="update")
        return op, var.initializer

    def uninit_resource_slot():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=True)
        accum = v1.Variable([0.1, 0.1], name="accum", use_resource=True)
        op = tf.raw_ops.ResourceApplyAdagrad(var=var.handle, accum=accum.handle, lr=0.1,
                                             grad=[1.0, 1.0], name="update")
        return op, var.initializer

    def grad_shape():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=False)
        grad = v1.placeholder_with_default([1.0, 2.0, 3.0], None, name="grad")
        return tf.raw_ops.ApplyGradientDescent(var=var, alpha=0.1, delta=grad,
                                               name="update"), var.initializer

    def momentum_shape():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=True)
        accum = v1.Variable([1.0, 2.0], name="accum", use_resource=True)
        grad = v1.placeholder_with_default([[1.0, 2.0]], None, name="grad")
        return tf.raw_ops.ResourceApplyMomentum(
            var=var.handle, accum=accum.handle, lr=0.1, grad=grad, momentum=0.9,
            name="update"), [var.initializer, accum.initializer]

    def lr_not_scalar():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=False)
        lr = v1.placeholder_with_default([0.1, 0.1], None, name="lr")
        return tf.raw_ops.ApplyGradientDescent(var=var, alpha=lr, delta=[1.0, 1.0],
                                               name="update"), var.initializer

    def sparse_out_of_range():
        var = v1.Variable([[1.0], [2.0]], name="var", use_resource=False)
        accum = v1.Variable([[0.1], [0.1]], name="accum", use_resource=False)
        idx = v1.placeholder_with_default([0, 5], None, name="idx")
        return tf.raw_ops.SparseApplyAdagrad(var=var, accum=accum, lr=0.1,
                                             grad=[[1.0], [1.0]], indices=idx,
                                             name="update"), [var.initializer,
                                                              accum.initializer]

    def sparse_vector_out_of_range():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=False)
        accum = v1.Variable([0.1, 0.1], name="accum", use_resource=False)
        linear = v1.Variable([0.1, 0.1], name="linear", use_resource=False)
        idx = v1.placeholder_with_default([-1], None, name="idx")
        return tf.raw_ops.SparseApplyFtrl(var=var, accum=accum, linear=linear,
                                          grad=[1.0], indices=idx, lr=0.1, l1=0.0, l2=0.0,
                                          lr_power=-0.5, name="update"), \
            [var.initializer, accum.initializer, linear.initializer]

    def sparse_grad_rows():
        var = v1.Variable([[1.0], [2.0]], name="var", use_resource=True)
        accum = v1.Variable([[0.1], [0.1]], name="accum", use_resource=True)
        grad = v1.placeholder_with_default([[1.0], [1.0], [1.0]], None, name="grad")
        return tf.raw_ops.ResourceSparseApplyMomentum(
            var=var.handle, accum=accum.handle, lr=0.1, grad=grad, indices=[0, 1],
            momentum=0.9, name="update"), [var.initializer, accum.initializer]

    def keras_momentum_out_of_range():
        var = v1.Variable([[1.0], [2.0]], name="var", use_resource=True)
        accum = v1.Variable([[0.1], [0.1]], name="accum", use_resource=True)
        idx = v1.placeholder_with_default([1, 2], None, name="idx")
        return tf.raw_ops.ResourceSparseApplyKerasMomentum(
            var=var.handle, accum=accum.handle, lr=0.1, grad=[[1.0], [1.0]], indices=idx,
            momentum=0.9, name="update"), [var.initializer, accum.initializer]

    def proximal_negative_lr():
        var = v1.Variable([1.0, 2.0], name="var", use_resource=False)
        accum = v1.Variable([0.1, 0.1], name="accum", use_resource=False)
        lr = v1.placeholder_with_default(-0.1, None, name="lr")
        return tf.raw_ops.ApplyProximalAdagrad(var=var, accum=accum, lr=lr, l1=0.0, l2=0.0,
                                               grad=[1.0, 1.0], name="update"), \
            [var.initializer, accum.initializer]

    for name, build in (("uninitialized_slot", uninit_slot),
                        ("uninitialized_resource_slot", uninit_resource_slot),
                        ("grad_shape", grad_shape), ("momentum_shape", momentum_shape),
                        ("lr_not_scalar", lr_not_scalar),
                        ("sparse_out_of_range", sparse_out_of_range),
                        ("sparse_vector_out_of_range", sparse_vector_out_of_range),
                        ("sparse_grad_rows", sparse_grad_rows),
                        ("keras_momentum_out_of_range", keras_momentum_out_of_range),
                        ("proximal_negative_lr", proximal_negative_lr)):
        record(name, build)
    return out


def main() -> None:
    import tensorflow as tf
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    tf.compat.v1.disable_eager_execution()
    op_list = op_def_pb2.OpList()
    for name in op_names():
        op_list.op.add().CopyFrom(op_def_registry.get(name))
    (HERE / "training_op_defs.pb").write_bytes(op_list.SerializeToString(deterministic=True))
    rng = np.random.default_rng(25)
    metas, arrays = {}, {}
    for case in cases():
        meta, values = run_case(tf, case, rng)
        metas[case["name"]] = meta
        arrays.update({f"{case['name']}/{k}": v for k, v in values.items()})
    np.savez_compressed(HERE / "training_kernels.npz", **arrays)
    doc = {"cases": metas, "errors": error_cases(tf)}
    (HERE / "training_kernels.json").write_text(json.dumps(doc, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
