"""tf.custom_gradient in graph mode (TF's _graph_mode_decorator): the function's outputs
and inputs pass through one IdentityN whose gradient is the user's `grad_fn`, registered
under a fresh name ("CustomGradient-<n>") and selected with gradient_override_map."""

from __future__ import annotations

import functools
import inspect
import itertools

from aioflow.framework import nest, ops
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops

_uid = itertools.count(1)


def custom_gradient(f=None):
    """Decorate `f(*args) -> (result, grad_fn)`: the result's gradient with respect to the
    args is `grad_fn(*result_grads)` (one gradient per arg)."""
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords "
                             "arguments only when eager execution is enabled.")
        return _graph_mode_decorator(f, args)

    return decorated


def _graph_mode_decorator(f, args):
    name = f"CustomGradient-{next(_uid)}"
    args = [ops.convert_to_tensor(x) for x in nest.flatten(args)]
    result, grad_fn = f(*args)
    flat_result = [ops.convert_to_tensor(x) for x in nest.flatten(result)]
    flat_result_len = len(flat_result)
    spec = inspect.getfullargspec(grad_fn)
    if "variables" in spec.args or "variables" in spec.kwonlyargs:
        raise NotImplementedError("custom_gradient's grad_fn(variables=...) is not supported "
                                  "in aioflow yet")

    @RegisterGradient(name)
    def _internal_grad_fn(unused_op, *result_grads):
        result_grads = list(result_grads[:flat_result_len])
        input_grads = grad_fn(*result_grads)
        input_grads = nest.flatten(input_grads) if isinstance(input_grads, (list, tuple)) \
            else [input_grads]
        if len(input_grads) != len(args):
            raise ValueError(f"custom_gradient function expected to return {len(args)} "
                             f"gradients, but returned {len(input_grads)} instead.")
        return [None] * flat_result_len + input_grads

    all_tensors = flat_result + args
    with ops.get_default_graph().gradient_override_map({"IdentityN": name}):
        all_tensors = array_ops.identity_n(all_tensors)
    return nest.pack_sequence_as(result, all_tensors[:flat_result_len])
