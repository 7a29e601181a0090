"""tf.train.init_from_checkpoint (TF's checkpoint_utils): variables made by get_variable
take their initial values from a checkpoint instead of their initializers. Each mapped
variable's initializer becomes a RestoreV2 (`checkpoint_initializer`, on CPU) of its
checkpoint tensor assigned to it, so `global_variables_initializer()` built afterwards
loads them (warm starts, fine-tuning).

A partitioned variable's parts each restore their slice of the checkpoint tensor.
`assignment_map` maps checkpoint names to current ones, as TF's: `'scope/': 'scope2/'`
(every variable under a scope, by the rest of its name), `'/': 'scope/'` (the
checkpoint's root), `'name': 'name2'` or `'name': variable`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aioflow.checkpoint.checkpoint_utils import _checkpoint_filename, load_checkpoint
from aioflow.framework import ops as ops_mod
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, state_ops, variable_scope
from aioflow.ops import variables as variables_mod
from aioflow.ops.partitioned_variables import PartitionedVariable


def _is_variable(x) -> bool:
    return isinstance(x, variables_mod.Variable) or getattr(x, "_is_resource", False)


def _set_checkpoint_initializer(variable, ckpt_file: str, tensor_name: str,
                                slice_spec: str = "",
                                name: str = "checkpoint_initializer") -> None:
    base_type = variable.dtype.base_dtype
    with ops_mod.device(variable.device), ops_mod.device("/cpu:0"):
        restore_op = apply_op("RestoreV2", name=name, prefix=ckpt_file,
                              tensor_names=[tensor_name], shape_and_slices=[slice_spec],
                              dtypes=[base_type])
        if isinstance(restore_op, list):
            restore_op = restore_op[0]
    if getattr(variable, "_is_resource", False):
        with ops_mod.device(variable.device):
            restored = array_ops.identity(restore_op)
            init_op = state_ops.assign_variable_op(variable.handle, restored)
    else:
        init_op = state_ops.assign(variable, restore_op,
                                   validate_shape=variable.shape.is_fully_defined()).op
    variable._initializer_op = init_op
    restore_op.set_shape(variable.shape)
    variable._initial_value = restore_op


def _set_variable_or_list_initializer(variable_or_list, ckpt_file: str,
                                      tensor_name: str) -> None:
    """A variable from the whole tensor; the parts of a partitioned one each from its
    slice (all parts of one variable, as TF checks)."""
    if isinstance(variable_or_list, (list, tuple)):
        slice_name = None
        for v in variable_or_list:
            info = v._save_slice_info
            if slice_name is None:
                slice_name = info.full_name
            elif slice_name != info.full_name:
                raise ValueError(f"Slices must all be from the same tensor: {slice_name} != "
                                 f"{info.full_name}")
            _set_checkpoint_initializer(v, ckpt_file, tensor_name, info.spec)
    else:
        _set_checkpoint_initializer(variable_or_list, ckpt_file, tensor_name, "")


def _collect_partitioned_variable(name: str, all_vars: dict):
    """The parts name/part_0, name/part_1, ... when there are any."""
    if f"{name}/part_0" not in all_vars:
        return None
    parts, i = [], 0
    while f"{name}/part_{i}" in all_vars:
        parts.append(all_vars[f"{name}/part_{i}"])
        i += 1
    return parts


def init_from_checkpoint(ckpt_dir_or_file, assignment_map) -> None:
    """Replace the initializers of the mapped variables with loads from the checkpoint
    (a prefix, or a directory: its latest checkpoint)."""
    ckpt_file = _checkpoint_filename(ckpt_dir_or_file)
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    items = assignment_map.items() if isinstance(assignment_map, Mapping) else assignment_map
    store_vars = variable_scope._store().vars
    for tensor_name_in_ckpt, current in sorted(items, key=lambda x: x[0]):
        if isinstance(current, PartitionedVariable):
            current = list(current)
        if _is_variable(current) or (isinstance(current, list)
                                     and all(_is_variable(v) for v in current)):
            var = current
        else:
            var = store_vars.get(current)
            if var is None:
                var = _collect_partitioned_variable(current, store_vars)
        if var is not None:
            if tensor_name_in_ckpt not in variable_map:
                raise ValueError(f"Tensor {tensor_name_in_ckpt} is not found in "
                                 f"{ckpt_dir_or_file} checkpoint {variable_map}")
            if _is_variable(var) and \
                    not var.shape.is_compatible_with(variable_map[tensor_name_in_ckpt]):
                raise ValueError(
                    f"Shape of variable {var.name} ({var.shape}) doesn't match with shape "
                    f"of tensor {tensor_name_in_ckpt} "
                    f"({variable_map[tensor_name_in_ckpt]}) from checkpoint reader.")
            _set_variable_or_list_initializer(var, ckpt_file, tensor_name_in_ckpt)
            continue
        scopes = current[:current.rindex("/")] if "/" in current else ""
        if not tensor_name_in_ckpt.endswith("/"):
            raise ValueError(f"Assignment map with scope only name {scopes} should map to "
                             f"scope only {tensor_name_in_ckpt}. Should be 'scope/': "
                             "'other_scope/'.")
        scope_variables = sorted({n[:n.index("/part_")] if "/part_" in n else n
                                  for n in store_vars
                                  if not scopes or n.startswith(scopes + "/")})
        for var_name in scope_variables:
            full_tensor_name = var_name[len(scopes):]
            if current != "/":
                full_tensor_name = full_tensor_name[1:]
            if tensor_name_in_ckpt != "/":
                full_tensor_name = tensor_name_in_ckpt + full_tensor_name
            if full_tensor_name.endswith("/"):
                full_tensor_name = full_tensor_name[:-1]
            if full_tensor_name not in variable_map:
                raise ValueError(
                    f"Tensor {full_tensor_name} ({var_name[len(scopes) + 1:]} in "
                    f"{tensor_name_in_ckpt}) is not found in {ckpt_dir_or_file} checkpoint")
            var = store_vars.get(var_name)
            if var is None:
                var = _collect_partitioned_variable(var_name, store_vars)
            _set_variable_or_list_initializer(var, ckpt_file, full_tensor_name)


__all__ = ["init_from_checkpoint"]
