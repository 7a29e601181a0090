"""tf.nn.embedding_lookup (TF's embedding_ops._embedding_lookup_and_transform): the rows
`ids` of one table (a Gather colocated with it, ResourceGather for a resource variable,
then an Identity) or of a table split into parts (a list of tensors or variables, or a
PartitionedVariable): ids assigned to parts by the "mod" or "div" strategy,
DynamicPartition, one Gather per part colocated with it, ParallelDynamicStitch and a
Reshape to ids' shape + the rows' shape. The gradient with respect to each part is
IndexedSlices of its rows (sparse updates, slot by slot)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, clip_ops, constant_op, data_flow_ops, math_ops
from aioflow.ops.partitioned_variables import PartitionedVariable


def _gather(params, ids, name=None):
    """TF's v1 gather along axis 0: a resource variable's sparse_read, else GatherV2."""
    if getattr(params, "_is_resource", False):
        return params.sparse_read(ids, name=name)
    return array_ops.gather(params, ids, name=name)


def _clip(params, ids, max_norm):
    """Rows whose l2-norm exceeds max_norm scaled down to it."""
    if max_norm is None:
        return params
    ids_rank = array_ops.rank(ids)
    params_rank = array_ops.rank(params)
    return clip_ops.clip_by_norm(params, max_norm,
                                 axes=math_ops.range(ids_rank, params_rank))


def _assignments(flat_ids, params, np_parts: int, partition_strategy: str):
    """(part of each id, id within its part)."""
    if partition_strategy == "mod":
        return flat_ids % np_parts, flat_ids // np_parts
    if partition_strategy != "div":
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}.Must be "
                         f"one of either `mod` or `div`.")
    dim_0_size = tensor_shape.Dimension(params[0].get_shape().as_list()[0]
                                        if params[0].get_shape().rank else None)
    for p in params[1:]:
        dim_0_size += tensor_shape.Dimension(p.get_shape().as_list()[0]
                                             if p.get_shape().rank else None)
    if dim_0_size.value:
        num_total_ids = constant_op.constant(dim_0_size.value, flat_ids.dtype)
    else:
        sizes = []
        for p in params:
            dim = p.get_shape().as_list()[0] if p.get_shape().rank else None
            if dim is not None:
                sizes.append(dim)
            else:
                with ops.colocate_with(p.op):
                    sizes.append(array_ops.shape(p)[0])
        num_total_ids = math_ops.reduce_sum(math_ops.cast(array_ops.stack(sizes),
                                                          flat_ids.dtype))
    ids_per_partition = num_total_ids // np_parts
    extras = num_total_ids % np_parts
    p_assignments = math_ops.maximum(flat_ids // (ids_per_partition + 1),
                                     (flat_ids - extras) // ids_per_partition)
    new_ids = array_ops.where(p_assignments < extras, flat_ids % (ids_per_partition + 1),
                              (flat_ids - extras) % ids_per_partition)
    return p_assignments, new_ids


def embedding_lookup(params, ids, partition_strategy: str = "mod", name=None,
                     validate_indices: bool = True, max_norm=None):
    """The rows `ids` of `params`: a tensor or variable, a list of them (the parts of
    one table), or a PartitionedVariable."""
    del validate_indices
    if params is None:
        raise ValueError("params must be specified")
    if isinstance(params, (list, tuple)) and not params:
        raise ValueError("Length of params is currently 0. Need at least one param.")
    if isinstance(params, PartitionedVariable):
        params = list(params)
    if not isinstance(params, list):
        params = list(params) if isinstance(params, tuple) else [params]
    with ops.name_scope(name, "embedding_lookup", params + [ids]) as name:
        np_parts = len(params)
        if not any(getattr(p, "_is_resource", False) for p in params):
            params = [ops.convert_to_tensor(p, name="params") for p in params]
        ids = ops.convert_to_tensor(ids, name="ids")
        if np_parts == 1:
            with ops.colocate_with(params[0].op):
                result = _clip(_gather(params[0], ids, name=name), ids, max_norm)
            return array_ops.identity(result)
        flat_ids = array_ops.reshape(ids, [-1])
        original_indices = math_ops.range(array_ops.size(flat_ids, out_type=dtypes.int32))
        p_assignments, new_ids = _assignments(flat_ids, params, np_parts, partition_strategy)
        p_assignments = math_ops.cast(p_assignments, dtypes.int32)
        gather_ids = data_flow_ops.dynamic_partition(new_ids, p_assignments, np_parts)
        pindices = data_flow_ops.dynamic_partition(original_indices, p_assignments, np_parts)
        partitioned_result = []
        for p in range(np_parts):
            with ops.device(None), ops.colocate_with(params[p].op):
                partitioned_result.append(_gather(params[p], gather_ids[p]))
        ret = apply_op("ParallelDynamicStitch", indices=pindices, data=partitioned_result,
                       name=name)
        element_shape_s = params[0].get_shape()[1:]
        for p in params[1:]:
            element_shape_s = element_shape_s.merge_with(p.get_shape()[1:])
        if element_shape_s.is_fully_defined():
            element_shape_d = element_shape_s
        else:
            with ops.colocate_with(params[0].op):
                element_shape_d = array_ops.shape(params[0])[1:]
        ret = array_ops.reshape(ret, array_ops.concat([array_ops.shape(ids),
                                                       element_shape_d], 0))
        ret.set_shape(ids.get_shape().concatenate(element_shape_s))
        return _clip(ret, ids, max_norm)


__all__ = ["embedding_lookup"]
