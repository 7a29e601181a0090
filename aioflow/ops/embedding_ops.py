"""tf.nn.embedding_lookup (TF's embedding_ops._embedding_lookup_and_transform, no
transform). One params tensor: a Gather colocated with the params, then an Identity, so
the gradient with respect to the params is IndexedSlices of the looked-up rows. Several
params tensors (a partitioned embedding): each id is assigned a partition and a row in it
("mod": id % n and id // n; "div": contiguous ranges, the first partitions one row longer
when the rows do not divide evenly), the ids are split with DynamicPartition, each part
gathered from its tensor (colocated with it), and the rows put back in order with
ParallelDynamicStitch and reshaped to ids' shape + the rows' shape; each params tensor's
gradient is then IndexedSlices of its own rows."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, data_flow_ops, math_ops
from aioflow.ops.clip_ops import clip_by_norm
from aioflow.ops.constant_op import constant
from aioflow.ops.partitioned_variables import PartitionedVariable


def embedding_lookup(params, ids, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm=None):
    """The rows `ids` of `params`: a tensor or variable (ref or resource), or a list of
    them partitioning one table (a PartitionedVariable: its parts); rows with an l2-norm
    above `max_norm` are scaled down to it."""
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    if isinstance(params, PartitionedVariable):
        params = list(params)  # its parts
    params = list(params) if isinstance(params, (list, tuple)) else [params]
    with ops.name_scope(name, "embedding_lookup", params + [ids]) as name:
        if not any(_is_resource(p) for p in params):
            params = [ops.convert_to_tensor(p, name=f"params_{i}")
                      for i, p in enumerate(params)]
        ids = ops.convert_to_tensor(ids, name="ids")
        if len(params) == 1:
            with _colocate_with(params[0]):
                result = _clip(_gather(params[0], ids, name=name), ids, max_norm)
            return array_ops.identity(result)
        return _clip(_partitioned_lookup(params, ids, partition_strategy, name), ids,
                     max_norm)


def _is_resource(p) -> bool:
    return getattr(p, "_is_resource", False)


def _colocate_with(p):
    """Colocation with a tensor's op or a variable's (a resource variable's handle)."""
    return ops.colocate_with(p.op)


def _gather(p, ids, name=None):
    """Rows of a tensor (Gather) or of a resource variable (ResourceGather)."""
    if _is_resource(p):
        return p.sparse_read(ids, name=name)
    return array_ops.gather(p, ids, name=name)


def _clip(params, ids, max_norm):
    """params with each embedding's l2-norm clipped to max_norm (TF's _clip)."""
    if max_norm is None:
        return params
    ids_rank, ids_static = _rank(ids)
    params_rank, params_static = _rank(params)
    axes = (list(range(ids_rank, params_rank)) if ids_static and params_static
            else math_ops.range(ids_rank, params_rank))
    return clip_by_norm(params, max_norm, axes=axes)


def _rank(x):
    """(rank, True) when x's rank is known and not 0, else (a Rank tensor, False), as TF."""
    rank = ops.convert_to_tensor(x).get_shape().ndims
    if rank:
        return rank, True
    return array_ops.rank(x), False


def _partitioned_lookup(params, ids, partition_strategy, name):
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = math_ops.range(array_ops.size(flat_ids, out_type=dtypes.int32))
    if partition_strategy == "mod":
        p_assignments = flat_ids % n
        new_ids = flat_ids // n
    elif partition_strategy == "div":
        p_assignments, new_ids = _div_assignments(params, flat_ids)
    else:
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}."
                         "Must be one of either `mod` or `div`.")
    p_assignments = math_ops.cast(p_assignments, dtypes.int32)
    gather_ids = data_flow_ops.dynamic_partition(new_ids, p_assignments, n)
    pindices = data_flow_ops.dynamic_partition(original_indices, p_assignments, n)
    partitioned_result = []
    for p in range(n):
        with ops.device(None), _colocate_with(params[p]):
            partitioned_result.append(_gather(params[p], gather_ids[p]))
    ret = apply_op("ParallelDynamicStitch", name=name, indices=pindices,
                   data=partitioned_result)
    element_shape_s = params[0].get_shape()[1:]
    for p in params[1:]:
        element_shape_s = element_shape_s.merge_with(p.get_shape()[1:])
    if element_shape_s.is_fully_defined():
        element_shape_d = element_shape_s
    else:
        with _colocate_with(params[0]):
            params_shape = array_ops.shape(params[0])
        element_shape_d = params_shape[1:]
    ret = array_ops.reshape(ret, array_ops.concat([array_ops.shape(ids), element_shape_d], 0))
    ret.set_shape(ids.get_shape().concatenate(element_shape_s))
    return ret


def _div_assignments(params, flat_ids):
    """(partition, row in it) of each id for the "div" strategy."""
    n = len(params)
    dim_0_size = tensor_shape.Dimension(tensor_shape.dimension_value(params[0].get_shape()[0]))
    for p in range(1, n):
        dim_0_size += tensor_shape.Dimension(
            tensor_shape.dimension_value(params[p].get_shape()[0]))
    if dim_0_size.value:
        num_total_ids = constant(dim_0_size.value, flat_ids.dtype)
    else:
        dim_0_sizes = []
        for p in range(n):
            param_p_dim = tensor_shape.dimension_value(params[p].get_shape()[0])
            if param_p_dim is not None:
                dim_0_sizes.append(param_p_dim)
            else:
                with _colocate_with(params[p]):
                    dim_0_sizes.append(array_ops.shape(params[p])[0])
        num_total_ids = math_ops.reduce_sum(
            math_ops.cast(array_ops.stack(dim_0_sizes), flat_ids.dtype))
    ids_per_partition = num_total_ids // n
    extras = num_total_ids % n
    p_assignments = math_ops.maximum(flat_ids // (ids_per_partition + 1),
                                     (flat_ids - extras) // ids_per_partition)
    new_ids = array_ops.where(p_assignments < extras, flat_ids % (ids_per_partition + 1),
                              (flat_ids - extras) % ids_per_partition)
    return p_assignments, new_ids


__all__ = ["embedding_lookup"]
