"""`model = await af.saved_model.load(export_dir, tags=None)` (TF 2's tf.saved_model.load):
load a SavedModel of either format and expose its signatures as async callables.

TF 2 SavedModels (tf.saved_model.save, Keras `model.export()`; one MetaGraphDef with an
object graph): the graph is imported with its function library into a new Session, the
variables are restored from the object-based checkpoint (variables/variables, keys
`<object path>/.ATTRIBUTES/VARIABLE_VALUE`): the checkpoint's TrackableObjectGraph names
each variable object's key, the SavedObjectGraph says which function captures which
object, and the graph's call nodes give the handle fed to that capture; one RestoreV2 reads
the values and an AssignVariableOp per variable stores them, as TF's restore function does.
Then the `__saved_model_init_op` signature runs, if any (assets fed, as the C++ loader).
Python objects are not rebuilt: what the loader gives is the signatures, the restored
variables and the session; objects it cannot restore are refused (object_graph.py).

v1 SavedModels (tf.compat.v1.saved_model.Builder) load through the v1 loader (loader.py)
into the model's own Session, so a server calls either format the same way:
`await model.signatures["serving_default"](x=...)`.
"""

from __future__ import annotations

import asyncio
import os

from aioflow.framework import errors, op_def_registry
from aioflow.framework import ops as ops_mod
from aioflow.framework.importer import import_graph_def
from aioflow.framework.op_def_library import apply_op
from aioflow.lib.tensor_bundle import BundleReader
from aioflow.ops import array_ops, state_ops
from aioflow.saved_model import constants, loader, object_graph
from aioflow.saved_model.signature import Signature

__all__ = ["LoadedModel", "load"]

#: Attrs through which a node names a function of the library.
_FUNC_ATTRS = ("f", "then_branch", "else_branch", "cond", "body", "branches")


class LoadedModel:
    """A loaded SavedModel: `signatures` ({key: Signature}), the Session they run in,
    its graph and MetaGraphDef; `variables` lists what a TF 2 model restored. Close it
    (`await model.close()` or `async with`) to release the session."""

    def __init__(self, export_dir: str, session, meta_graph_def, signatures: dict,
                 variables: list, tf2: bool):
        self.export_dir = export_dir
        self.session = session
        self.graph = session.graph
        self.meta_graph_def = meta_graph_def
        self.signatures = signatures
        self.variables = variables
        self.tensorflow_version = meta_graph_def.meta_info_def.tensorflow_version
        self.tags = list(meta_graph_def.meta_info_def.tags)
        self.is_tf2 = tf2

    async def close(self) -> None:
        await self.session.close()

    async def __aenter__(self) -> LoadedModel:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __repr__(self) -> str:
        kind = "TF 2" if self.is_tf2 else "v1"
        return (f"<LoadedModel {kind} {self.export_dir!r} tags={self.tags} "
                f"signatures={sorted(self.signatures)}>")


def _flat_tags(tags):
    if tags is None or isinstance(tags, set):
        return tags
    return [tags] if isinstance(tags, str) else list(tags)


def _called(node) -> list[str]:
    """The functions a NodeDef names through its func attrs."""
    names = []
    for key in _FUNC_ATTRS:
        if key not in node.attr:
            continue
        value = node.attr[key]
        if value.HasField("func"):
            names.append(value.func.name)
        names.extend(f.name for f in value.list.func)
    return names


def _saver_nodes(meta) -> set[str]:
    """The graph nodes of the SaverDef's save and restore calls (never run here)."""
    saver = meta.saver_def
    names = {saver.restore_op_name, saver.save_tensor_name.split(":")[0]}
    return {n.lstrip("^") for n in names if n}


def check_library(meta, export_dir: str) -> None:
    """Every function the graph and its functions call is in the library (NotFoundError
    naming the caller otherwise), and every op the signatures can reach is registered or
    a function (a custom op is refused with NotFoundError saying so)."""
    graph_def = meta.graph_def
    functions = {f.signature.name: f for f in graph_def.library.function}
    callers = [("", n) for n in graph_def.node]
    callers += [(f.signature.name, n) for f in graph_def.library.function for n in f.node_def]
    for owner, node in callers:
        for name in _called(node):
            if name not in functions:
                where = f"node '{node.name}'" + (f" of function {owner}" if owner else "")
                raise errors.NotFoundError(
                    None, None, f"Function {name} is not defined: {where} ({node.op}) "
                    f"calls it, and the function library of the SavedModel at "
                    f"{export_dir} does not have it.")
    skip = _saver_nodes(meta)
    unknown_ops: dict[str, str] = {}
    pending = [("", n) for n in graph_def.node if n.name not in skip]
    seen: set[str] = set()
    while pending:
        owner, node = pending.pop()
        if node.op not in functions and op_def_registry.get_registration(node.op) is None:
            unknown_ops.setdefault(node.op, f"node '{node.name}'" + (
                f" of function {owner}" if owner else ""))
        for name in [*_called(node), *([node.op] if node.op in functions else [])]:
            if name not in seen:
                seen.add(name)
                pending.extend((name, n) for n in functions[name].node_def)
    if unknown_ops:
        listed = ", ".join(f"{op} (used by {where})" for op, where in sorted(unknown_ops.items()))
        raise errors.NotFoundError(
            None, None, f"The SavedModel at {export_dir} uses ops aioflow does not have "
            f"(custom ops are not supported): {listed}.")


def _pick_tf2_meta(saved_model, tags, export_dir):
    meta = saved_model.meta_graphs[0]
    if tags is not None and set(tags) != set(meta.meta_info_def.tags):
        raise ValueError(
            f"Got an incompatible argument to `tags`: {tags}. The SavedModel at "
            f"{export_dir} has one MetaGraph with tags {meta.meta_info_def.tags}. You may "
            "omit the argument, pass 'None', or pass matching tags.")
    return meta


def _read_checkpoint_graph(prefix: str):
    """The checkpoint's TrackableObjectGraph and {key: (dtype, shape)} (blocking)."""
    with BundleReader(prefix) as reader:
        key = object_graph.OBJECT_GRAPH_KEY.encode()
        if not reader.contains(key):
            raise errors.NotFoundError(
                None, None, f"The checkpoint {prefix} has no object graph "
                f"({object_graph.OBJECT_GRAPH_KEY}): it is not an object-based checkpoint.")
        graph = object_graph.parse_trackable_graph(reader.lookup(key).item())
        entries = {k.decode(): reader.dtype_and_shape(k) for k in reader.keys()}
    return graph, entries


def _check_entry(var, entries, prefix) -> None:
    if var.checkpoint_key not in entries:
        raise errors.NotFoundError(
            None, None, f"Key {var.checkpoint_key} not found in checkpoint {prefix} (the "
            f"value of the variable '{var.name}').")
    dtype, shape = entries[var.checkpoint_key]
    if dtype != var.dtype:
        raise errors.InvalidArgumentError(
            None, None, f"tensor_name = {var.checkpoint_key}; expected dtype "
            f"{var.dtype.name} does not equal original dtype {dtype.name}")
    if not var.shape.is_compatible_with(shape):
        raise errors.InvalidArgumentError(
            None, None, f"The variable '{var.name}' has shape {var.shape} but the "
            f"checkpoint's {var.checkpoint_key} has shape {tuple(shape)}")


def _add_restore_op(graph, variables, prefix: str):
    """RestoreV2 of the variables' keys and an AssignVariableOp per handle, grouped."""
    with graph.as_default(), ops_mod.name_scope("saved_model_restore"):
        with ops_mod.device("cpu:0"):
            restored = apply_op(
                "RestoreV2", prefix=array_ops.constant(prefix, name="prefix"),
                tensor_names=[v.checkpoint_key for v in variables],
                shape_and_slices=[""] * len(variables), dtypes=[v.dtype for v in variables])
        if not isinstance(restored, list):
            restored = [restored]
        assigns = [state_ops.assign_variable_op(graph.as_graph_element(v.handle), value)
                   for v, value in zip(variables, restored, strict=True)]
        return array_ops.group(*assigns, name="restore_all")


async def _restore(session, meta, export_dir: str) -> list:
    """Restore the variables the graph's functions capture (see the module docstring)."""
    obj_graph = meta.object_graph_def
    has_variables = any(n.HasField("variable") for n in obj_graph.nodes)
    prefix = os.path.join(export_dir, constants.VARIABLES_DIRECTORY,
                          constants.VARIABLES_FILENAME)
    if not has_variables:
        return []
    trackable, entries = await asyncio.to_thread(_read_checkpoint_graph, prefix)
    variables = object_graph.variables_to_restore(obj_graph, trackable, meta.graph_def)
    if not variables:
        return []
    for var in variables:
        _check_entry(var, entries, prefix)
    restore_op = _add_restore_op(session.graph, variables, prefix)
    await session.run(restore_op)
    return variables


def _import(graph, graph_def) -> None:
    with graph.as_default():
        import_graph_def(graph_def, name="")


def _signatures(session, meta, tf2: bool) -> dict[str, Signature]:
    functions = object_graph.signature_functions(meta.object_graph_def) if tf2 else {}
    out = {}
    for key in sorted(meta.signature_def):
        if key == constants.INIT_OP_SIGNATURE_KEY:
            continue
        fn = functions.get(key)
        if fn is None:
            out[key] = Signature(session, key, meta.signature_def[key])
            continue
        out[key] = Signature(
            session, key, meta.signature_def[key], keywords=fn.argument_keywords,
            input_specs=fn.input_specs, output_specs=fn.output_specs,
            function_name=fn.graph_name, allowed_positional=fn.allowed_positional_arguments)
    return out


async def _load_tf2(saved_model, tags, export_dir: str, config) -> LoadedModel:
    from aioflow.client.session import Session
    from aioflow.framework.ops import Graph

    meta = _pick_tf2_meta(saved_model, tags, export_dir)
    object_graph.check_supported(meta.object_graph_def, export_dir)
    check_library(meta, export_dir)
    graph = Graph()
    await asyncio.to_thread(_import, graph, meta.graph_def)
    session = Session(graph=graph, config=config)
    try:
        variables = await _restore(session, meta, export_dir)
        init = meta.signature_def.get(constants.INIT_OP_SIGNATURE_KEY)
        if init is not None and constants.INIT_OP_SIGNATURE_KEY in init.outputs:
            await session.run(init.outputs[constants.INIT_OP_SIGNATURE_KEY].name,
                              feed_dict=loader.get_asset_tensors(export_dir, meta))
        signatures = _signatures(session, meta, tf2=True)
    except BaseException:
        await session.close()
        raise
    return LoadedModel(export_dir, session, meta, signatures, variables, tf2=True)


async def _load_v1(saved_model, tags, export_dir: str, config) -> LoadedModel:
    from aioflow.client.session import Session
    from aioflow.framework.ops import Graph

    if tags is None:
        if len(saved_model.meta_graphs) != 1:
            tag_sets = [m.meta_info_def.tags for m in saved_model.meta_graphs]
            raise ValueError(
                "Importing a SavedModel with `tf.saved_model.load` requires a `tags=` "
                "argument if there is more than one MetaGraph. Got `tags=None`, but there "
                f"are {len(saved_model.meta_graphs)} MetaGraphs in the SavedModel with tag "
                f"sets: {tag_sets}. Pass a `tags=` argument to load this SavedModel.")
        tags = list(saved_model.meta_graphs[0].meta_info_def.tags)
    session = Session(graph=Graph(), config=config)
    try:
        meta = await loader.load(session, tags, export_dir)
        signatures = _signatures(session, meta, tf2=False)
    except BaseException:
        await session.close()
        raise
    return LoadedModel(export_dir, session, meta, signatures, [], tf2=False)


async def load(export_dir, tags=None, *, config=None) -> LoadedModel:
    """Load the SavedModel at `export_dir` (TF 2 or v1) into a new Session (made with
    `config`, a ConfigProto, if given); `tags` picks the MetaGraphDef (optional when
    there is one). Returns a LoadedModel whose `signatures[key]` are async callables."""
    export_dir = os.fspath(export_dir)
    tags = _flat_tags(tags)
    saved_model = await asyncio.to_thread(loader.parse_saved_model, export_dir)
    if len(saved_model.meta_graphs) == 1 and saved_model.meta_graphs[0].HasField(
            "object_graph_def"):
        return await _load_tf2(saved_model, tags, export_dir, config)
    return await _load_v1(saved_model, tags, export_dir, config)
