"""tf.nn.embedding_lookup for one params tensor (TF's embedding_ops): a Gather colocated
with the params, then an Identity, so the gradient with respect to the params is
IndexedSlices of the looked-up rows."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm=None):
    """The rows `ids` of `params` (a tensor, or a list of one tensor)."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    if len(params) > 1:
        raise NotImplementedError("embedding_lookup over partitioned params (more than one "
                                  "tensor) is not supported yet")
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup's max_norm is not supported yet")
    with ops.name_scope(name, "embedding_lookup", params + [ids]) as name:
        params = [ops.convert_to_tensor(p) for p in params]
        ids = ops.convert_to_tensor(ids, name="ids")
        with ops.colocate_with(params[0]):
            result = array_ops.gather(params[0], ids, name=name)
        return array_ops.identity(result)


__all__ = ["embedding_lookup"]
