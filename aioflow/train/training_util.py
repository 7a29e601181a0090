"""The global step (TF's training_util): `get_or_create_global_step` makes the int64
scalar variable `global_step` (zeros initializer, not trainable, in GLOBAL_VARIABLES and
GLOBAL_STEP) at the top name scope; `get_global_step` finds it (the collection, else the
tensor named global_step:0); `global_step(sess, t)` reads it. Also the read hooks use
(`_get_or_create_global_step_read`) and `_increment_global_step`."""

from __future__ import annotations

import logging

from aioflow.framework import dtypes, ops
from aioflow.ops import control_flow_ops, init_ops, state_ops, variable_scope, variables

GLOBAL_STEP = "global_step"
GLOBAL_VARIABLES = "variables"
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def global_step(sess, global_step_tensor) -> int:
    """The global step's value (a blocking session's run)."""
    return int(sess.run(global_step_tensor))


def get_global_step(graph=None):
    """The global step variable of `graph` (or the default graph), or None."""
    graph = graph or ops.get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if len(found) == 1:
        global_step_tensor = found[0]
    elif not found:
        try:
            global_step_tensor = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        logging.getLogger(__name__).error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(global_step_tensor)
    return global_step_tensor


def create_global_step(graph=None):
    """A new global step; ValueError when one exists."""
    graph = graph or ops.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return variable_scope.get_variable(
            GLOBAL_STEP, shape=[], dtype=dtypes.int64,
            initializer=init_ops.zeros_initializer(), trainable=False,
            collections=[GLOBAL_VARIABLES, GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step, made when there is none."""
    graph = graph or ops.get_default_graph()
    found = get_global_step(graph)
    return found if found is not None else create_global_step(graph)


def assert_global_step(global_step_tensor) -> None:
    """TypeError unless `global_step_tensor` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, (variables.Variable, ops.Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: '
                        f'{global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: '
                        f'{global_step_tensor.dtype}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def _get_global_step_read(graph=None):
    graph = graph or ops.get_default_graph()
    found = graph.get_collection(GLOBAL_STEP_READ_KEY)
    if len(found) > 1:
        raise RuntimeError(f"There are multiple items in collection {GLOBAL_STEP_READ_KEY}. "
                           f"There should be only one.")
    return found[0] if found else None


def _get_or_create_global_step_read(graph=None):
    """A read of the global step made once (under `global_step/`), its initial value
    while it is uninitialized."""
    graph = graph or ops.get_default_graph()
    found = _get_global_step_read(graph)
    if found is not None:
        return found
    step = get_global_step(graph)
    if step is None:
        return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        if isinstance(step, variables.Variable):
            value = control_flow_ops.cond(variables.is_variable_initialized(step),
                                          step.read_value, lambda: step.initial_value)
        else:
            value = step
        graph.add_to_collection(GLOBAL_STEP_READ_KEY, value + 0)
    return _get_global_step_read(graph)


def _increment_global_step(increment, graph=None):
    graph = graph or ops.get_default_graph()
    step = get_global_step(graph)
    if step is None:
        raise ValueError("Global step tensor should be created by "
                         "tf.train.get_or_create_global_step before calling increment.")
    read = _get_or_create_global_step_read(graph)
    with graph.as_default(), graph.name_scope(None), graph.name_scope(step.op.name + "/"):
        with ops.control_dependencies([read]):
            return state_ops.assign_add(step, increment)
