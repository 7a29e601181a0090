"""tf.compat.v1.train.Optimizer: the base of TF 1's optimizers, building the graph TF 1
builds: `compute_gradients` (af.gradients of the loss with respect to the trainable
variables), `apply_gradients` (slots made once, under the variables' names; one update per
variable in the scope `<optimizer>/update_<variable>`, colocated with it; a dense gradient
through `_apply_dense` / `_resource_apply_dense`, an IndexedSlices one summed per row
first; the global step incremented after all of them; the op in the TRAIN_OP collection),
and `minimize` (both).

A subclass supplies `_create_slots`, `_prepare`, `_apply_dense`, `_resource_apply_dense`,
`_apply_sparse`, `_resource_apply_sparse` and maybe `_finish`, as in TF.
"""

from __future__ import annotations

import contextlib

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients import gradients_util
from aioflow.ops import array_ops, math_ops, segment_ops, state_ops
from aioflow.ops import variables as variables_mod
from aioflow.train import slot_creator

GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2
TRAIN_OP = "train_op"
TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"


def _is_resource(v) -> bool:
    return getattr(v, "_is_resource", False)


def _var_key(var):
    """The key of a variable in the slot dicts (TF's: its graph and op name)."""
    return (var.op.graph, var.op.name)


@contextlib.contextmanager
def init_scope():
    """TF's init_scope in a graph: the current name scope, no control dependencies."""
    with ops.control_dependencies(None):
        yield


def deduplicate_indexed_slices(values, indices):
    """(values summed per distinct index, the distinct indices): TF's
    _deduplicate_indexed_slices (Unique, then UnsortedSegmentSum)."""
    unique_indices, new_index_positions = array_ops.unique(indices)
    summed_values = segment_ops.unsorted_segment_sum(
        values, new_index_positions, array_ops.shape(unique_indices)[0])
    return summed_values, unique_indices


class _RefVariableProcessor:
    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v._ref()

    def update_op(self, optimizer, g):
        if isinstance(g, ops.Tensor):
            update_op = optimizer._apply_dense(g, self._v)
            if self._v.constraint is not None:
                with ops.control_dependencies([update_op]):
                    return self._v.assign(self._v.constraint(self._v))
            return update_op
        if self._v.constraint is not None:
            raise RuntimeError("Cannot use a constraint function on a sparse variable.")
        return optimizer._apply_sparse_duplicate_indices(g, self._v)


class _DenseResourceVariableProcessor:
    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v.handle

    def update_op(self, optimizer, g):
        if isinstance(g, IndexedSlices):
            if self._v.constraint is not None:
                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
            return optimizer._resource_apply_sparse_duplicate_indices(g.values, self._v,
                                                                      g.indices)
        update_op = optimizer._resource_apply_dense(g, self._v)
        if self._v.constraint is not None:
            with ops.control_dependencies([update_op]):
                return self._v.assign(self._v.constraint(self._v))
        return update_op


class _TensorProcessor:
    """A tensor being optimized: only its gradient is computed."""

    def __init__(self, v):
        self._v = v

    def target(self):
        return self._v

    def update_op(self, optimizer, g):
        raise NotImplementedError("Trying to update a Tensor ", self._v)


def _get_processor(v):
    if _is_resource(v):
        return _DenseResourceVariableProcessor(v)
    if isinstance(v, variables_mod.Variable):
        return _RefVariableProcessor(v)
    if isinstance(v, ops.Tensor):
        return _TensorProcessor(v)
    raise NotImplementedError("Trying to optimize unsupported type ", v)


class Optimizer:
    """Base class for optimizers (tf.compat.v1.train.Optimizer)."""

    GATE_NONE = GATE_NONE
    GATE_OP = GATE_OP
    GATE_GRAPH = GATE_GRAPH

    def __init__(self, use_locking: bool, name: str):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        # slot name -> {variable key: slot variable}
        self._slots: dict[str, dict] = {}
        self._non_slot_dict: dict = {}

    def get_name(self) -> str:
        return self._name

    # -- the public API ------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops: bool = False,
                 name=None, grad_loss=None):
        """compute_gradients, then apply_gradients of those that are not None."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do "
                f"not support gradients, between variables "
                f"{[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops: bool = False,
                          grad_loss=None):
        """[(gradient or None, variable)] for the trainable variables (or `var_list`)."""
        if callable(loss):
            raise NotImplementedError("compute_gradients of a callable loss is eager "
                                      "execution's, which aioflow does not have")
        if gate_gradients not in (GATE_NONE, GATE_OP, GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([grad_loss])
        if var_list is None:
            var_list = (variables_mod.trainable_variables()
                        + ops.get_collection(TRAINABLE_RESOURCE_VARIABLES))
        else:
            var_list = list(var_list)
        processors = [_get_processor(v) for v in var_list]
        if not var_list:
            raise ValueError("No variables to optimize.")
        var_refs = [p.target() for p in processors]
        grads = gradients_util.gradients(
            loss, var_refs, grad_ys=grad_loss, gate_gradients=(gate_gradients == GATE_OP),
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == GATE_GRAPH:
            grads = array_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list, strict=True))
        self._assert_valid_dtypes([v for g, v in grads_and_vars
                                   if g is not None and v.dtype != dtypes.resource])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The op applying the gradients (and incrementing `global_step` after)."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        converted = []
        for g, v in grads_and_vars:
            if g is not None:
                if not isinstance(g, IndexedSlices):
                    try:
                        g = ops.convert_to_tensor(g)
                    except TypeError:
                        raise TypeError("Gradient must be convertible to a Tensor or "
                                        f"IndexedSlices, or None: {g}") from None
                if not isinstance(g, (ops.Tensor, IndexedSlices)):
                    raise TypeError(f"Gradient must be a Tensor, IndexedSlices, or None: {g}")
            converted.append((g, v, _get_processor(v)))
        var_list = [v for g, v, _ in converted if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v) for _, v, _ in converted]}.")
        with init_scope():
            self._create_slots(var_list)
        update_ops = []
        with ops.name_scope(name, self._name) as name:
            self._prepare()
            for grad, var, processor in converted:
                if grad is None:
                    continue
                with ops.name_scope("update_" + var.op.name), ops.colocate_with(var.op):
                    update_ops.append(processor.update_op(self, grad))
            if global_step is None:
                apply_updates = self._finish(update_ops, name)
            else:
                with ops.control_dependencies([self._finish(update_ops, "update")]):
                    with ops.colocate_with(global_step.op):
                        apply_updates = _increment(global_step, name)
            if isinstance(apply_updates, ops.Tensor):
                apply_updates = apply_updates.op
            train_op = ops.get_collection_ref(TRAIN_OP)
            if apply_updates not in train_op:
                train_op.append(apply_updates)
            return apply_updates

    def get_slot(self, var, name: str):
        """The slot `name` made for `var`, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list:
        """The optimizer's variables of the default graph (slots and non-slot ones), by
        name."""
        graph = ops.get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        for slots in self._slots.values():
            found.extend(v for v in slots.values() if v.op.graph is graph)
        return sorted(found, key=lambda v: v.name)

    # -- for subclasses --------------------------------------------------------------------
    def _create_slots(self, var_list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError()

    def _resource_apply_dense(self, grad, handle):
        raise NotImplementedError()

    def _apply_sparse(self, grad, var):
        raise NotImplementedError()

    def _resource_apply_sparse(self, grad, handle, indices):
        raise NotImplementedError()

    def _apply_sparse_duplicate_indices(self, grad, var):
        summed, unique = deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(summed, unique, grad.dense_shape), var)

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        summed, unique = deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed, handle, unique)

    def _finish(self, update_ops, name_scope):
        return array_ops.group(*update_ops, name=name_scope)

    def _call_if_callable(self, param):
        return param() if callable(param) else param

    def _valid_dtypes(self) -> set:
        return {dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64}

    def _assert_valid_dtypes(self, tensors) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                raise ValueError(f"Invalid type {dtype!r} for {t.name}, expected: "
                                 f"{list(valid)}.")

    # -- slots -----------------------------------------------------------------------------
    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot(self, var, val, slot_name: str, op_name: str):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot(var, val, op_name)
        return named_slots[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype,
                                           slot_name: str, op_name: str):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_slot_with_initializer(
                var, initializer, shape, dtype, op_name)
        return named_slots[_var_key(var)]

    def _zeros_slot(self, var, slot_name: str, op_name: str):
        named_slots = self._slot_dict(slot_name)
        if _var_key(var) not in named_slots:
            named_slots[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
        return named_slots[_var_key(var)]

    def _create_non_slot_variable(self, initial_value, name: str, colocate_with):
        """A variable of the optimizer's own (Adam's beta1_power), one per graph,
        colocated with `colocate_with`, of its kind (ref or resource)."""
        graph = colocate_with.op.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with ops.colocate_with(colocate_with.op):
                v = variables_mod.Variable(initial_value, name=name, trainable=False,
                                           use_resource=_is_resource(colocate_with))
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph=None):
        return self._non_slot_dict.get((name, graph))


def _increment(global_step, name):
    """global_step += 1 (TF's assign_add, AssignAddVariableOp for a resource step)."""
    if _is_resource(global_step):
        one = ops.convert_to_tensor(1, dtype=global_step.dtype)
        return apply_op("AssignAddVariableOp", name=name, resource=global_step.handle,
                        value=one)
    return state_ops.assign_add(global_step, 1, name=name)


def update_variable(var, value, op_type: str = "Assign", use_locking: bool = False):
    """`var` assigned (op_type "Assign"), added to or subtracted from ("AssignAdd",
    "AssignSub") as TF's state_ops functions do it: (the op to wait for, the new value).
    A ref variable: the op's output. A resource variable: the *VariableOp, and the read
    waiting for it that TF's _UnreadVariable makes (in the current colocation)."""
    if not _is_resource(var):
        fn = {"Assign": state_ops.assign, "AssignAdd": state_ops.assign_add,
              "AssignSub": state_ops.assign_sub}[op_type]
        out = fn(var, value, use_locking=use_locking)
        return out.op, out
    value = ops.convert_to_tensor(value, dtype=var.dtype)
    kwargs = {"validate_shape": var.shape.is_fully_defined()} if op_type == "Assign" else {}
    op = apply_op(op_type + "VariableOp", resource=var.handle, value=value, **kwargs)
    with ops.control_dependencies([op]):
        return op, var._read()


def resource_scatter_add(var, indices, updates):
    """TF's Adam._resource_scatter_add: ResourceScatterAdd, then the variable's value
    (read outside any colocation) once it is done."""
    op = apply_op("ResourceScatterAdd", resource=var.handle, indices=indices, updates=updates)
    with ops.control_dependencies([op]):
        return var.value()


def cast(x, dtype):
    """math_ops.cast as the optimizers use it (a variable of the dtype as it is)."""
    if isinstance(x, variables_mod.Variable) and x.dtype.base_dtype == dtype:
        return x if _is_resource(x) else math_ops.cast(x, dtype)
    return math_ops.cast(x, dtype)
