"""Meta graphs (tf.compat.v1.train.export_meta_graph / import_meta_graph): a MetaGraphDef
holding the GraphDef (with `_output_shapes`), the stripped OpDefs of the ops it uses, a
Saver's SaverDef and the graph's collections as TF stores them: variable collections as
VariableDef protos in bytes_list, tensors and ops by name in node_list, ints, floats and
strings in int64_list / float_list / bytes_list.

import_scoped_meta_graph imports the GraphDef into the default graph, rebuilds the
collections (one Variable object per VariableDef, shared between collections, as TF's) and
returns the SaverDef; saver.import_meta_graph (af.train.import_meta_graph) makes the Saver
over it (a new Saver when there is none but there are variables; None when there are no
variables), as TF's saver.py does. Files are read and written in binary or text format.
"""

from __future__ import annotations

import asyncio
import logging
import os

from google.protobuf import any_pb2, message, text_format

from aioflow.framework import importer, op_def_registry, tensor_shape
from aioflow.framework import ops as ops_mod
from aioflow.ops import variables as variables_mod
from aioflow.proto import meta_graph_pb2, op_def_pb2, variable_pb2
from aioflow.proto.meta_graph_pb2 import CollectionDef, MetaGraphDef

__all__ = ["MetaGraphDef", "export_meta_graph", "import_scoped_meta_graph",
           "read_meta_graph_file", "variable_from_proto", "variable_to_proto"]

_log = logging.getLogger(__name__)

#: The collections whose items are variables (stored as VariableDef protos).
VARIABLE_COLLECTIONS = frozenset({
    "variables", "local_variables", "model_variables", "trainable_variables",
    "moving_average_variables", "metric_variables", "concatenated_variables",
})


# -- variables <-> VariableDef ------------------------------------------------------------
def variable_to_proto(var) -> variable_pb2.VariableDef:
    """The VariableDef of a variable (tensor, initializer, snapshot, initial value)."""
    snapshot = var._graph_element if var._is_resource else var._snapshot
    vdef = variable_pb2.VariableDef(
        variable_name=var._variable.name, initializer_name=var.initializer.name,
        snapshot_name=snapshot.name, is_resource=var._is_resource,
        trainable=var.trainable)
    if var._initial_value is not None:
        vdef.initial_value_name = var._initial_value.name
    if var._save_slice_info is not None:
        vdef.save_slice_info_def.CopyFrom(var._save_slice_info.to_proto())
    return vdef


def _prefixed(name: str, import_scope: str | None) -> str:
    return f"{import_scope}/{name}" if import_scope and name else name


def variable_from_proto(variable_def, import_scope=None, graph=None):
    """A Variable over the nodes a VariableDef names in `graph` (the default graph)."""
    graph = graph or ops_mod.get_default_graph()
    cls = (variables_mod.ResourceVariable if variable_def.is_resource
           else variables_mod.Variable)
    var = object.__new__(cls)

    def element(name):
        return graph.as_graph_element(_prefixed(name, import_scope))

    var._graph = graph
    var._variable = element(variable_def.variable_name)
    var._initializer_op = element(variable_def.initializer_name)
    var._initial_value = (element(variable_def.initial_value_name)
                          if variable_def.initial_value_name else None)
    var._trainable = variable_def.trainable
    var._constraint = None
    if variable_def.HasField("save_slice_info_def"):
        var._save_slice_info = variables_mod.SaveSliceInfo(
            save_slice_info_def=variable_def.save_slice_info_def, import_scope=import_scope)
    snapshot = element(variable_def.snapshot_name)
    if variable_def.is_resource:
        handle = var._variable
        var._handle = handle
        var._dtype = handle.op.get_attr("dtype")
        var._shape = tensor_shape.as_shape(handle.op.get_attr("shape"))
        var._graph_element = snapshot
        var._is_initialized_op = None
    else:
        var._snapshot = snapshot
    return var


# -- export ---------------------------------------------------------------------------------
def stripped_op_list_for_graph(graph_def) -> op_def_pb2.OpList:
    """The OpDefs (no docs) of the ops a GraphDef uses, sorted by name."""
    used = sorted({node.op for node in graph_def.node}
                  | {node.op for f in graph_def.library.function for node in f.node_def})
    ops = []
    for name in used:
        try:
            op_def = op_def_pb2.OpDef()
            op_def.CopyFrom(op_def_registry.get(name))
        except (KeyError, ValueError):
            continue  # a function's name
        op_def.ClearField("summary")
        op_def.ClearField("description")
        ops.append(op_def)
    return op_def_pb2.OpList(op=ops)


def _collection_def(graph, key: str) -> CollectionDef | None:
    """One collection as TF's add_collection_def stores it; None (with a warning) for a
    collection of items it cannot store."""
    items = graph.get_collection(key)
    col = CollectionDef()
    try:
        if key in VARIABLE_COLLECTIONS:
            col.bytes_list.value.extend(variable_to_proto(v).SerializeToString()
                                        for v in items)
            return col
        for item in items:
            _add_item(col, item)
    except (TypeError, AttributeError) as e:
        _log.warning("Issue encountered when serializing %s.\n%s", key, e)
        return None
    return col


def _add_item(col: CollectionDef, item) -> None:
    if isinstance(item, (ops_mod.Tensor, ops_mod.Operation)):
        col.node_list.value.append(item.name)
    elif isinstance(item, any_pb2.Any):
        col.any_list.value.add().CopyFrom(item)
    elif isinstance(item, bool) or not isinstance(item, (int, float, str, bytes)):
        raise TypeError(f"{type(item).__name__} items are not stored in a meta graph")
    elif isinstance(item, int):
        col.int64_list.value.append(item)
    elif isinstance(item, float):
        col.float_list.value.append(item)
    else:
        col.bytes_list.value.append(item.encode("utf-8") if isinstance(item, str) else item)


def _strip_default_attrs(graph_def) -> None:
    """Remove the attrs whose value is their OpDef's default."""
    for node in graph_def.node:
        try:
            op_def = op_def_registry.get(node.op)
        except (KeyError, ValueError):
            continue
        for attr in op_def.attr:
            if (attr.HasField("default_value") and attr.name in node.attr
                    and node.attr[attr.name] == attr.default_value):
                del node.attr[attr.name]


def build_meta_graph_def(graph=None, graph_def=None, saver_def=None, meta_info_def=None,
                         collection_list=None, clear_devices=False,
                         strip_default_attrs=False) -> MetaGraphDef:
    """The MetaGraphDef of a graph (blocking only on the graph, no file)."""
    graph = graph or ops_mod.get_default_graph()
    meta = MetaGraphDef()
    if meta_info_def is not None:
        meta.meta_info_def.CopyFrom(meta_info_def)
    if graph_def is None:
        graph_def = graph.as_graph_def(add_shapes=True)
    meta.graph_def.CopyFrom(graph_def)
    if clear_devices:
        for node in meta.graph_def.node:
            node.device = ""
    if strip_default_attrs:
        _strip_default_attrs(meta.graph_def)
        meta.meta_info_def.stripped_default_attrs = True
    meta.meta_info_def.stripped_op_list.CopyFrom(stripped_op_list_for_graph(meta.graph_def))
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(keys):
        col = _collection_def(graph, key)
        if col is not None and col.WhichOneof("kind"):
            meta.collection_def[key].CopyFrom(col)
    return meta


def write_meta_graph_file(meta: MetaGraphDef, filename, as_text=False) -> None:
    """Write a MetaGraphDef (binary, or text format), creating the directory (blocking)."""
    filename = os.fspath(filename)
    dirname = os.path.dirname(filename)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if as_text:
        with open(filename, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(meta))
    else:
        with open(filename, "wb") as f:
            f.write(meta.SerializeToString(deterministic=True))


def _export_args(saver, saver_def, export_scope, clear_extraneous_savers, kwargs):
    if export_scope is not None or clear_extraneous_savers:
        raise NotImplementedError("export_meta_graph(export_scope=..., "
                                  "clear_extraneous_savers=True) is not supported")
    if kwargs:
        raise TypeError("unexpected arguments: " + ", ".join(sorted(kwargs)))
    return saver_def if saver is None else saver.as_saver_def()


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, saver=None,
                      **kwargs) -> MetaGraphDef:
    """The MetaGraphDef of `graph` (the default graph), written to `filename` when given
    (blocking: from a coroutine use export_meta_graph_async)."""
    saver_def = _export_args(saver, saver_def, export_scope, clear_extraneous_savers,
                             kwargs)
    meta = build_meta_graph_def(graph, graph_def, saver_def, meta_info_def,
                                collection_list, clear_devices, strip_default_attrs)
    if filename:
        write_meta_graph_file(meta, filename, as_text)
    return meta


async def export_meta_graph_async(filename=None, as_text=False, **kwargs) -> MetaGraphDef:
    """export_meta_graph with the file written on a thread."""
    meta = export_meta_graph(**kwargs)
    if filename:
        await asyncio.to_thread(write_meta_graph_file, meta, filename, as_text)
    return meta


# -- import ---------------------------------------------------------------------------------
def read_meta_graph_file(filename) -> MetaGraphDef:
    """A MetaGraphDef file, binary or text (TF's IOErrors for a missing or bad file)."""
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise OSError(f"File {filename} does not exist.")
    with open(filename, "rb") as f:
        data = f.read()
    meta = MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except message.DecodeError:
        pass
    try:
        text_format.Merge(data.decode("utf-8"), meta)
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise OSError(f"Cannot parse file {filename}: {e}.") from None
    return meta


def _restore_collection(graph, key: str, col: CollectionDef, import_scope, shared) -> None:
    """Add one CollectionDef's items to the graph's collection `key`."""
    kind = col.WhichOneof("kind")
    if kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
        for value in col.bytes_list.value:
            if value not in shared:
                vdef = variable_pb2.VariableDef()
                vdef.ParseFromString(value)
                shared[value] = variable_from_proto(vdef, import_scope, graph)
            graph.add_to_collection(key, shared[value])
    elif kind == "node_list":
        for name in col.node_list.value:
            graph.add_to_collection(key, graph.as_graph_element(
                _prefixed(name, import_scope)))
    elif kind in ("bytes_list", "int64_list", "float_list", "any_list"):  # Any kept, as TF
        for value in getattr(col, kind).value:
            graph.add_to_collection(key, value)
    elif kind is not None:
        _log.warning("Cannot identify data type for collection %s. Skipping.", key)


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                             **kwargs):
    """Import a MetaGraphDef (or a file holding one) into the default graph: its GraphDef
    and collections (TF's meta_graph.import_scoped_meta_graph); returns the MetaGraphDef's
    SaverDef with names in `import_scope`, or None. saver.import_meta_graph builds the
    Saver from it. Reads the file in the caller's thread."""
    if kwargs:
        raise TypeError("unexpected arguments: " + ", ".join(sorted(kwargs)))
    meta = meta_graph_or_file
    if not isinstance(meta, meta_graph_pb2.MetaGraphDef) and hasattr(meta, "SerializeToString"):
        meta = meta_graph_pb2.MetaGraphDef.FromString(meta.SerializeToString())  # TF's class
    if not isinstance(meta, meta_graph_pb2.MetaGraphDef):
        meta = read_meta_graph_file(meta)
    graph_def = meta.graph_def
    if clear_devices:
        graph_def = type(graph_def)()
        graph_def.CopyFrom(meta.graph_def)
        for node in graph_def.node:
            node.device = ""
    graph = ops_mod.get_default_graph()
    importer.import_graph_def(graph_def, name=import_scope or "")
    shared: dict[bytes, object] = {}
    for key in sorted(meta.collection_def):
        if key == "savers":
            continue  # Savers are rebuilt from saver_def
        _restore_collection(graph, key, meta.collection_def[key], import_scope, shared)
    if not meta.HasField("saver_def"):
        return None
    saver_def = type(meta.saver_def)()
    saver_def.CopyFrom(meta.saver_def)
    if import_scope:
        for field in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            setattr(saver_def, field, _prefixed(getattr(saver_def, field), import_scope))
    return saver_def
