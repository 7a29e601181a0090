"""af.train.Saver: tf.compat.v1.train.Saver over V2 checkpoints.

The constructor builds TensorFlow's save/restore subgraph node for node (BulkSaverBuilder):
`save/filename` and `save/Const` (PlaceholderWithDefault), `save/SaveV2` with its
`tensor_names` / `shape_and_slices` constants, `save/control_dependency`, one
`save/RestoreV2` on CPU:0, an `Assign` per ref variable (`save/Assign`, `save/Assign_1`,
...) and an `Identity` + `AssignVariableOp` per resource variable, grouped by
`save/restore_all`. Sharded: a SaveV2 per device into `<prefix>_temp/part-*` merged by
MergeV2Checkpoints, a `restore_shard` group per device. Variables are saved under their
op names (a list) or under the keys of a dict, in the keys' sorted order, as TF's.

`await saver.save(sess, prefix)` runs the save tensor, then (on a thread) updates the
`checkpoint` state file, deletes checkpoints beyond max_to_keep and writes the meta graph;
`await saver.restore(sess, prefix)` runs restore_all. Errors are TF's: a missing key is
NotFoundError, a shape or dtype mismatch InvalidArgumentError, both wrapped in TF's
"Restoring from checkpoint failed..." message; a prefix that is no checkpoint ValueError.

Partitioned variables (a PartitionedVariable, or parts with a save_slice_info) are saved
as TF saves them: one SaveV2 entry per part under the full variable's name with the
part's slice spec ("10 4 0,4:0,4"), which the bundle writes as TF's sliced entries.

Not supported (refused): write_version=V1, reshape=True.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time

import numpy as np

from aioflow.checkpoint import checkpoint_management
from aioflow.checkpoint.meta_graph import (
    export_meta_graph,
    export_meta_graph_async,
    import_scoped_meta_graph,
)
from aioflow.framework import ops as ops_mod
from aioflow.framework.device_spec import DeviceSpec
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, state_ops
from aioflow.ops import variables as variables_mod
from aioflow.ops.partitioned_variables import PartitionedVariable
from aioflow.proto.saver_pb2 import SaverDef

_log = logging.getLogger(__name__)

__all__ = ["Saver", "SaverDef"]


def _all_saveable_objects() -> list:
    """GLOBAL_VARIABLES then SAVEABLE_OBJECTS of the default graph."""
    keys = variables_mod.GraphKeys
    return (ops_mod.get_collection(keys.GLOBAL_VARIABLES)
            + ops_mod.get_collection(keys.SAVEABLE_OBJECTS))


def _is_variable(value) -> bool:
    return isinstance(value, variables_mod.Variable)


def op_list_to_dict(op_list) -> dict:
    """{checkpoint key: variable, or list of slices} for a list of variables (keyed by
    their op names; the parts of a partitioned variable, by their save_slice_info, under
    the full variable's name) or a dict (checked); ValueError on a repeated name,
    TypeError on what is not a variable (TF's op_list_to_dict)."""
    if isinstance(op_list, dict):
        for key, var in op_list.items():
            if not isinstance(key, str):
                raise TypeError(f"names_to_saveables must be a dict mapping string names to "
                                f"trackable operations. Name is not a string: {key}")
            _check_variable(var)
        return dict(op_list)
    if not isinstance(op_list, (list, tuple, set)):
        raise TypeError(f"Variables to save should be passed in a dict or a list: {op_list}")
    names: dict = {}
    for var in sorted(op_list, key=lambda x: x.name):
        _check_variable(var)
        if isinstance(var, PartitionedVariable):
            if var.name in names:
                raise ValueError(f"At least two variables have the same name: {var.name}")
            names[var.name] = var
            continue
        info = var._save_slice_info if _is_variable(var) else None
        if info is not None:
            slices = names.setdefault(info.full_name, [])
            if not isinstance(slices, list):
                raise ValueError(f"Mixing slices and non-slices with the same name: "
                                 f"{info.full_name}")
            slices.append(var)
            continue
        name = var.op.name
        if name in names:
            raise ValueError(f"At least two variables have the same name: {name}")
        names[name] = var
    return names


def _check_variable(var) -> None:
    if isinstance(var, (list, tuple, PartitionedVariable)):
        for part in var:
            if not _is_variable(part):
                raise ValueError(f"Slices must all be Variables: {part}")
            if part._save_slice_info is None:
                raise ValueError(f"Slices must all be slices: {part}")
        return
    if not _is_variable(var) and not _is_saveable(var):
        raise TypeError(f"Can not convert a {type(var).__name__} into a Variable to save: "
                        f"{var}")


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One tensor SaveV2 writes and RestoreV2 reads: the checkpoint key, the slice spec
    ("" for a whole variable) and the variable (or saveable)."""

    key: str
    spec: str
    var: object

    @property
    def device(self) -> str:
        return self.var.device


def _entries(names_to_vars: dict) -> list[_Entry]:
    """The entries in key order, a partitioned variable's slices in its order (TF's
    validate_and_slice_inputs)."""
    out = []
    for key, var in sorted(names_to_vars.items(), key=lambda kv: kv[0]):
        if isinstance(var, (list, tuple, PartitionedVariable)):
            full_name = None
            for part in var:
                info = part._save_slice_info
                if full_name is None:
                    full_name = info.full_name
                elif full_name != info.full_name:
                    raise ValueError(f"Slices must all be from the same tensor: {full_name} "
                                     f"!= {info.full_name}")
                out.append(_Entry(key, info.spec, part))
        else:
            out.append(_Entry(key, "", var))
    return out


def _is_saveable(value) -> bool:
    """A saveable that is not a variable (tf.data's iterators): it gives the tensor to
    save (`_as_graph_element()`) and the op restoring it (`restore_from(tensor)`)."""
    return hasattr(value, "restore_from") and hasattr(value, "_as_graph_element")


def _save_tensor(entry: _Entry) -> ops_mod.Tensor:
    """What SaveV2 reads: a ref variable itself (a slice: its `read` value, as TF's
    ReferenceVariableSaveable), a resource variable's graph read."""
    if entry.spec and not entry.var._is_resource:
        return entry.var.value()
    return entry.var._as_graph_element()


def _restore_one(var, restored) -> ops_mod.Operation:
    """The assign of one restored tensor (Assign for a ref variable, Identity +
    AssignVariableOp for a resource one; a saveable's own restore op)."""
    if _is_saveable(var):
        return var.restore_from(restored)
    if var._is_resource:
        with ops_mod.device(var.device):
            value = array_ops.identity(restored)
            return state_ops.assign_variable_op(var.handle, value)
    return state_ops.assign(var._ref(), restored,
                            validate_shape=var.shape.is_fully_defined()).op


def _add_save_ops(filename_tensor, entries: list[_Entry]) -> ops_mod.Tensor:
    """SaveV2 of the entries, and the filename through an Identity after it."""
    save = apply_op("SaveV2", prefix=filename_tensor, tensor_names=[e.key for e in entries],
                    shape_and_slices=[e.spec for e in entries],
                    tensors=[_save_tensor(e) for e in entries],
                    dtypes=[e.var.dtype.base_dtype for e in entries])
    return array_ops.with_dependencies([save], filename_tensor)


def _add_restore_ops(filename_tensor, entries: list[_Entry], name) -> ops_mod.Operation:
    """One RestoreV2 on CPU:0 and an assign per entry, grouped as `name`."""
    with ops_mod.device("cpu:0"):
        restored = apply_op("RestoreV2", prefix=filename_tensor,
                            tensor_names=[e.key for e in entries],
                            shape_and_slices=[e.spec for e in entries],
                            dtypes=[e.var.dtype.base_dtype for e in entries])
    if not isinstance(restored, list):
        restored = [restored]
    assigns = [_restore_one(e.var, t) for e, t in zip(entries, restored, strict=True)]
    return array_ops.group(*assigns, name=name)


def _set_cpu0(device: str) -> str:
    """The device with its type and index replaced by CPU:0 (TF's set_cpu0)."""
    spec = DeviceSpec.from_string(device)
    return dataclasses.replace(spec, device_type="CPU", device_index=0).to_string()


def _group_by_devices(entries: list[_Entry]) -> list[tuple[str, list[_Entry]]]:
    """The entries per canonical device, devices sorted."""
    per_device: dict[str, list] = {}
    for entry in entries:
        device = DeviceSpec.from_string(entry.device).to_string()
        per_device.setdefault(device, []).append(entry)
    return sorted(per_device.items(), key=lambda t: t[0])


def _add_sharded_save_ops(filename_tensor, per_device) -> ops_mod.Tensor:
    """TF's _AddShardedSaveOpsForV2: a SaveV2 per device into a temporary prefix, then
    MergeV2Checkpoints into the real one."""
    from aioflow.ops import string_ops

    with ops_mod.device("CPU"):
        suffix = array_ops.where(
            string_ops.regex_full_match(filename_tensor, "^s3://.*"),
            ops_mod.convert_to_tensor(".part"), ops_mod.convert_to_tensor("_temp/part"))
        tmp_prefix = string_ops.join([filename_tensor, suffix])
    num_shards = ops_mod.convert_to_tensor(np.int32(len(per_device)), name="num_shards")
    saves, prefixes, last_device = [], [], None
    for shard, (device, items) in enumerate(per_device):
        last_device = device
        with ops_mod.device(_set_cpu0(device)):
            sharded = apply_op("ShardedFilename", basename=tmp_prefix,
                               shard=np.int32(shard), num_shards=num_shards)
            prefixes.append(sharded)
            saves.append(_add_save_ops(sharded, items))
    with ops_mod.control_dependencies([x.op for x in saves]), \
            ops_mod.device(_set_cpu0(last_device)):
        merge = apply_op("MergeV2Checkpoints", checkpoint_prefixes=prefixes,
                         destination_prefix=filename_tensor, delete_old_dirs=True)
        with ops_mod.control_dependencies([merge]):
            return array_ops.identity(filename_tensor)


def _add_sharded_restore_ops(filename_tensor, per_device) -> ops_mod.Operation:
    """A restore_shard group per device, grouped by restore_all."""
    shards = []
    for device, items in per_device:
        with ops_mod.device(device):
            shards.append(_add_restore_ops(filename_tensor, items, "restore_shard"))
    return array_ops.group(*shards, name="restore_all")


def build_saver_graph(names_to_vars: dict, name=None, filename=None,
                      sharded=False) -> SaverDef:
    """TF's BulkSaverBuilder._build_internal for V2: the save and restore ops; returns
    the SaverDef naming them (policy fields left to the caller)."""
    entries = _entries(names_to_vars)
    with ops_mod.name_scope(name, "save", [e.var.op for e in entries]):
        filename_tensor = array_ops.placeholder_with_default(
            filename or "model", shape=(), name="filename")
        filename_tensor = array_ops.placeholder_with_default(
            filename_tensor, shape=(), name="Const")
        if sharded:
            per_device = _group_by_devices(entries)
            save_tensor = _add_sharded_save_ops(filename_tensor, per_device)
            restore_op = _add_sharded_restore_ops(filename_tensor, per_device)
        else:
            save_tensor = _add_save_ops(filename_tensor, entries)
            restore_op = _add_restore_ops(filename_tensor, entries, "restore_all")
    return SaverDef(filename_tensor_name=filename_tensor.name,
                    save_tensor_name=save_tensor.name, restore_op_name=restore_op.name)


def _wrap_restore_error(err, cause: str):
    """TF's _wrap_restore_error_with_msg: the same class, the original message quoted."""
    message = ("Restoring from checkpoint failed. This is most likely due to "
               f"{cause} from the checkpoint. Please ensure that you have not altered the "
               "graph expected based on the checkpoint. Original error:\n\n"
               f"{err.message}")
    return type(err)(err.node_def, err.op, message)


class Saver:
    """Saves and restores variables (tf.compat.v1.train.Saver, V2 checkpoints)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None,
                 restore_sequentially=False, saver_def=None, builder=None,
                 defer_build=False, allow_empty=False, write_version=SaverDef.V2,
                 pad_step_number=False, save_relative_paths=False, filename=None):
        _refuse_unsupported(reshape, builder, defer_build, write_version)
        self._var_list = var_list
        self._name = name
        self._filename = filename
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._is_empty = False
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._graph = ops_mod.get_default_graph()
        if saver_def is None:
            saver_def = self._build(max_to_keep, keep_checkpoint_every_n_hours, sharded,
                                    write_version)
        elif saver_def.version != SaverDef.V2:
            raise NotImplementedError("only V2 checkpoints are supported by aioflow")
        self.saver_def = saver_def
        self._next_checkpoint_time = (
            time.time() + self.saver_def.keep_checkpoint_every_n_hours * 3600)

    def _build(self, max_to_keep, every_n_hours, sharded, version) -> SaverDef | None:
        """Build the graph of var_list (all saveable variables when None)."""
        var_list = self._var_list
        if var_list is None:
            var_list = _all_saveable_objects()
        if not var_list:
            if self._allow_empty:
                self._is_empty = True
                return SaverDef(max_to_keep=max_to_keep,
                                keep_checkpoint_every_n_hours=every_n_hours,
                                sharded=sharded, version=version)
            raise ValueError("No variables to save")
        saver_def = build_saver_graph(op_list_to_dict(var_list), self._name, self._filename,
                                      sharded)
        saver_def.max_to_keep = max_to_keep
        saver_def.keep_checkpoint_every_n_hours = every_n_hours
        saver_def.sharded = sharded
        saver_def.version = version
        return saver_def

    # -- TF's accessors ---------------------------------------------------------------------
    def as_saver_def(self) -> SaverDef | None:
        """The SaverDef (names of the filename tensor, save tensor and restore op); None for
        an empty Saver, which TF builds no SaverDef for (so its meta graphs carry none)."""
        return None if self._is_empty else self.saver_def

    def to_proto(self, export_scope=None) -> SaverDef | None:
        if export_scope is not None:
            raise NotImplementedError("Saver.to_proto(export_scope=...) is not supported")
        return self.as_saver_def()

    @property
    def last_checkpoints(self) -> list[str]:
        """The prefixes of the checkpoints not yet deleted, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time) -> None:
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list.")
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths) -> None:
        """Take up existing checkpoints (those whose files exist) as last_checkpoints."""
        found = []
        for path in checkpoint_paths:
            try:
                found.append((path, os.stat(f"{path}.index").st_mtime))
            except OSError:
                pass
        self.set_last_checkpoints_with_time(found)

    # -- saving -----------------------------------------------------------------------------
    async def save(self, sess, save_path, global_step=None, latest_filename=None,
                   meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
                   strip_default_attrs=False, save_debug_info=False):
        """Write a checkpoint; returns its prefix (`save_path-<global_step>` with a step),
        or None for an empty Saver. File work runs on a thread."""
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        checkpoint_file = save_path
        if global_step is not None:
            if not isinstance(global_step, int):
                global_step = int(await sess.run(global_step))
            fmt = "%s-%08d" if self._pad_step_number else "%s-%d"
            checkpoint_file = fmt % (save_path, global_step)
        save_path_parent = os.path.dirname(save_path)
        model_checkpoint_path = None
        if not self._is_empty:
            model_checkpoint_path = await self._run_save(sess, checkpoint_file,
                                                         save_path_parent)
            if write_state:
                self._record_last_checkpoint(model_checkpoint_path)
                await asyncio.to_thread(self._write_state, save_path_parent,
                                        model_checkpoint_path, latest_filename,
                                        meta_graph_suffix)
        if write_meta_graph:
            await export_meta_graph_async(
                f"{checkpoint_file}.{meta_graph_suffix}", graph=sess.graph, saver=self,
                strip_default_attrs=strip_default_attrs)
        return model_checkpoint_path

    async def _run_save(self, sess, checkpoint_file: str, parent: str) -> str:
        from aioflow.framework import errors

        try:
            path = await sess.run(self.saver_def.save_tensor_name,
                                  {self.saver_def.filename_tensor_name: checkpoint_file})
        except (errors.FailedPreconditionError, errors.NotFoundError) as exc:
            if not await asyncio.to_thread(os.path.isdir, parent or "."):
                raise ValueError(f"Parent directory of {checkpoint_file} doesn't exist, "
                                 "can't save.") from exc
            raise
        return path.decode("utf-8") if isinstance(path, bytes) else str(path)

    def _record_last_checkpoint(self, latest_save_path: str) -> None:
        """Append to last_checkpoints; the oldest beyond max_to_keep are to be deleted."""
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints
                                  if p[0] != latest_save_path]
        self._last_checkpoints.append((latest_save_path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _write_state(self, save_dir, model_checkpoint_path, latest_filename,
                     meta_graph_suffix) -> None:
        """The state file, then old checkpoints deleted (blocking: on a thread)."""
        checkpoint_management.update_checkpoint_state_internal(
            save_dir=save_dir, model_checkpoint_path=model_checkpoint_path,
            all_model_checkpoint_paths=self.last_checkpoints,
            latest_filename=latest_filename, save_relative_paths=self._save_relative_paths)
        self._maybe_delete_old_checkpoints(meta_graph_suffix)

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix="meta") -> None:
        """Delete the oldest checkpoint beyond max_to_keep, unless
        keep_checkpoint_every_n_hours preserves it."""
        if not self._checkpoints_to_be_deleted:
            return
        path, stamp = self._checkpoints_to_be_deleted.pop(0)
        if stamp > self._next_checkpoint_time:
            self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
            return
        checkpoint_management.remove_checkpoint(path, meta_graph_suffix=meta_graph_suffix)

    # -- restoring --------------------------------------------------------------------------
    async def restore(self, sess, save_path) -> None:
        """Assign every variable its value in the checkpoint `save_path`."""
        from aioflow.framework import errors

        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        prefix = os.fspath(save_path)
        if not await asyncio.to_thread(checkpoint_management.checkpoint_exists, prefix):
            raise ValueError("The passed save_path is not a valid checkpoint: " + prefix)
        try:
            await sess.run(self.saver_def.restore_op_name,
                           {self.saver_def.filename_tensor_name: prefix})
        except errors.NotFoundError as err:
            raise _wrap_restore_error(
                err, "a Variable name or other graph key that is missing") from None
        except errors.InvalidArgumentError as err:
            raise _wrap_restore_error(
                err, "a mismatch between the current graph and the graph") from None

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False,
                          clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """The MetaGraphDef of this Saver's graph with its SaverDef (written to filename
        when given; blocking)."""
        return export_meta_graph(filename=filename, graph=self._graph, saver=self,
                                 collection_list=collection_list, as_text=as_text,
                                 export_scope=export_scope, clear_devices=clear_devices,
                                 strip_default_attrs=strip_default_attrs)


def _refuse_unsupported(reshape, builder, defer_build, write_version) -> None:
    if write_version != SaverDef.V2:
        raise NotImplementedError("only V2 checkpoints (write_version=SaverDef.V2) are "
                                  "supported by aioflow")
    if reshape:
        raise NotImplementedError("Saver(reshape=True) is not supported by aioflow")
    if builder is not None or defer_build:
        raise NotImplementedError("Saver(builder=..., defer_build=True) are not supported "
                                  "by aioflow")


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      **kwargs):
    """Import a MetaGraphDef (or a file holding one) into the default graph; returns its
    Saver (None when the graph has no variables). Reads the file in the caller's thread:
    from a coroutine, call it through asyncio.to_thread or pass a parsed MetaGraphDef."""
    saver_def = import_scoped_meta_graph(meta_graph_or_file, clear_devices=clear_devices,
                                         import_scope=import_scope, **kwargs)
    if saver_def is not None:
        return Saver(saver_def=saver_def)
    graph = ops_mod.get_default_graph()
    if graph.get_collection("variables") or graph.get_collection("saveable_objects"):
        return Saver()
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None
