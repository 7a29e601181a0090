"""Reading a TF 2 SavedModel's object graph (SavedObjectGraph) against its checkpoint's
(TrackableObjectGraph): which objects the loader cannot rebuild, which function each
signature calls, and, per variable, its checkpoint key and the graph's handle for it.

TF writes both object graphs with the same node numbering (nodes[0] the root). A variable
object reaches the computation only as a captured input of a concrete function: the
function's `bound_inputs` list the node ids of the objects bound to its trailing inputs,
so in the MetaGraphDef's graph the call node of that function takes, as its last inputs,
the handles (VarHandleOp outputs) of those variables, in that order.
"""

from __future__ import annotations

import dataclasses

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.framework.function_library import FUNCTION_CALL_OPS
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.proto import saved_object_graph_pb2, trackable_object_graph_pb2

__all__ = ["OBJECT_GRAPH_KEY", "VARIABLE_VALUE", "RestoredVariable", "SignatureFunction",
           "check_supported", "parse_trackable_graph", "signature_functions",
           "variables_to_restore"]

#: The checkpoint key holding the serialized TrackableObjectGraph.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: The attribute name of a variable's value in the checkpoint.
VARIABLE_VALUE = "VARIABLE_VALUE"


@dataclasses.dataclass(frozen=True)
class SignatureFunction:
    """What TF's loader knows of a signature's concrete function: its FunctionDef name,
    its keyword arguments in order, and how many may be passed positionally."""

    function_name: str
    argument_keywords: tuple[str, ...]
    allowed_positional_arguments: int
    input_specs: dict[str, TensorSpec] | None  # by keyword, from the object graph
    output_specs: dict[str, TensorSpec] | None  # by output key, sorted (nest's order)

    @property
    def graph_name(self) -> str:
        """The traced function's own name, as TF's flat-signature errors print it
        (`__inference_signature_wrapper___call___125` -> `signature_wrapper___call__`)."""
        name = self.function_name
        if name.startswith("__inference_"):
            name = name[len("__inference_"):]
        head, _, tail = name.rpartition("_")
        return head if tail.isdigit() and head else name


@dataclasses.dataclass(frozen=True)
class RestoredVariable:
    """A variable object: its checkpoint key, dtype, shape, and the graph tensor holding
    its handle."""

    node_id: int
    name: str
    checkpoint_key: str
    dtype: dtypes.DType
    shape: tensor_shape.TensorShape
    handle: str


#: Resources TF registers whose creation (`_create_resource`) and initialization
#: (`_initialize`) the SavedModel's graph holds too: the table op the functions capture,
#: filled by the graph's `__saved_model_init_op` as TF's loader fills it by calling them.
_GRAPH_RESOURCES = frozenset({"tf.StaticHashTable"})
#: Objects TF itself registers for serialization and the graph restores without Python:
#: a TrackableConstant is the Const op its functions capture (SavedConstant.operation).
_TF_REGISTERED = _GRAPH_RESOURCES | {"tf.TrackableConstant"}


def _describe(node_id: int, obj) -> str:
    return f"node {node_id} ({obj.WhichOneof('kind') or 'an object with no kind'})"


def check_supported(object_graph: saved_object_graph_pb2.SavedObjectGraph,
                    export_dir: str) -> None:
    """Refuse objects aioflow cannot restore (NotImplementedError naming them): resources
    created by functions (lookup tables), objects saved through their own functions or a
    registered saver, and Python classes registered for serialization."""
    problems = []
    for node_id, obj in enumerate(object_graph.nodes):
        if obj.HasField("resource") and obj.registered_name not in _GRAPH_RESOURCES:
            problems.append(f"{_describe(node_id, obj)}: a resource (e.g. a tf.lookup "
                            "table) created by a function at load time")
        elif obj.saveable_objects:
            problems.append(f"{_describe(node_id, obj)}: an object saved through its own "
                            f"functions ({', '.join(sorted(obj.saveable_objects))})")
        if obj.registered_name and obj.registered_name not in _TF_REGISTERED:
            problems.append(f"{_describe(node_id, obj)}: the registered Python object "
                            f"{obj.registered_name!r}")
        if obj.registered_saver:
            problems.append(f"{_describe(node_id, obj)}: the registered saver "
                            f"{obj.registered_saver!r}")
        if obj.HasField("variable") and obj.variable.experimental_distributed_variable_components:
            problems.append(f"{_describe(node_id, obj)}: a distributed variable")
    if problems:
        raise NotImplementedError(
            f"The SavedModel at {export_dir} holds objects aioflow cannot restore "
            "(aioflow restores variables, constants, assets and functions, not arbitrary "
            "Python objects): " + "; ".join(problems))


def _specs_of_kwargs(structured) -> dict[str, TensorSpec] | None:
    """The (args, kwargs) input structure's kwargs as TensorSpecs, or None."""
    if structured.WhichOneof("kind") != "tuple_value" or len(
            structured.tuple_value.values) != 2:
        return None
    kwargs = structured.tuple_value.values[1]
    return _spec_dict(kwargs)


def _spec_dict(structured) -> dict[str, TensorSpec] | None:
    """A dict of TensorSpecs (a signature's inputs or outputs), or None."""
    if structured.WhichOneof("kind") != "dict_value":
        return None
    out = {}
    fields = structured.dict_value.fields  # a proto map: its iteration order is arbitrary
    for key in sorted(fields):
        value = fields[key]
        if value.WhichOneof("kind") != "tensor_spec_value":
            return None
        spec = value.tensor_spec_value
        out[key] = TensorSpec.from_proto(spec) if spec.name else TensorSpec(
            tensor_shape.TensorShape(spec.shape), spec.dtype, key)
    return out


def _child(object_graph, node_id: int, name: str) -> int | None:
    for ref in object_graph.nodes[node_id].children:
        if ref.local_name == name:
            return ref.node_id
    return None


def signature_functions(object_graph) -> dict[str, SignatureFunction]:
    """{signature key: its concrete function}, from the root's `signatures` map."""
    if not object_graph.nodes:
        return {}
    map_id = _child(object_graph, 0, "signatures")
    if map_id is None:
        return {}
    out = {}
    for ref in object_graph.nodes[map_id].children:
        obj = object_graph.nodes[ref.node_id]
        if not obj.HasField("bare_concrete_function"):
            continue
        bare = obj.bare_concrete_function
        concrete = object_graph.concrete_functions.get(bare.concrete_function_name)
        inputs = outputs = None
        if concrete is not None:
            inputs = _specs_of_kwargs(concrete.canonicalized_input_signature)
            outputs = _spec_dict(concrete.output_signature)
        out[ref.local_name] = SignatureFunction(
            bare.concrete_function_name, tuple(bare.argument_keywords),
            bare.allowed_positional_arguments, inputs, outputs)
    return out


def parse_trackable_graph(data: bytes) -> trackable_object_graph_pb2.TrackableObjectGraph:
    """The checkpoint's object graph (DataLossError for bytes that do not parse)."""
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        graph.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError has no stable base
        raise errors.DataLossError(
            None, None, f"Unable to parse the checkpoint's {OBJECT_GRAPH_KEY}: {e}") from None
    return graph


def _captured_handles(object_graph, graph_def) -> dict[int, str]:
    """{object node id: the graph tensor bound to it} over every call node of the graph
    whose function records bound inputs."""
    out: dict[int, str] = {}
    for node in graph_def.node:
        if node.op not in FUNCTION_CALL_OPS:
            continue
        concrete = object_graph.concrete_functions.get(node.attr["f"].func.name)
        if concrete is None or not concrete.bound_inputs:
            continue
        inputs = [i for i in node.input if not i.startswith("^")]
        bound = list(concrete.bound_inputs)
        if len(inputs) < len(bound):
            raise errors.InvalidArgumentError(
                None, None, f"Node '{node.name}' calls {node.attr['f'].func.name} with "
                f"{len(inputs)} inputs, fewer than its {len(bound)} captured inputs")
        for node_id, name in zip(bound, inputs[len(inputs) - len(bound):], strict=True):
            out.setdefault(node_id, name if ":" in name else f"{name}:0")
    return out


def variables_to_restore(object_graph, trackable_graph, graph_def) -> list[RestoredVariable]:
    """The variables a signature can reach, each with its checkpoint key and graph handle.
    A variable no call captures is not in the graph and has nothing to restore."""
    if len(trackable_graph.nodes) > len(object_graph.nodes):
        raise errors.InvalidArgumentError(
            None, None, f"The checkpoint's object graph has {len(trackable_graph.nodes)} "
            f"nodes, more than the SavedModel's {len(object_graph.nodes)}")
    handles = _captured_handles(object_graph, graph_def)
    out = []
    for node_id, obj in enumerate(object_graph.nodes):
        if not obj.HasField("variable") or node_id not in handles:
            continue
        keys = [a.checkpoint_key for a in trackable_graph.nodes[node_id].attributes
                if a.name == VARIABLE_VALUE] if node_id < len(trackable_graph.nodes) else []
        if not keys:
            raise errors.NotFoundError(
                None, None, f"The checkpoint has no value for the variable "
                f"'{obj.variable.name}' (object graph node {node_id})")
        out.append(RestoredVariable(
            node_id, obj.variable.name, keys[0], dtypes.as_dtype(obj.variable.dtype),
            tensor_shape.TensorShape(obj.variable.shape), handles[node_id]))
    return out
