"""import_graph_def: add the nodes of a GraphDef to the default graph, with TF's prefixing
and input_map rules. Nodes may come in any order (TF writes loop graphs out of order)."""

from __future__ import annotations

from aioflow.framework import (
    device_spec,
    dtypes,
    errors,
    graph_def_checks,
    node_def_util,
    op_def_registry,
    ops,
)
from aioflow.framework.gc_util import paused_gc
from aioflow.proto import attr_value_pb2, graph_pb2


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None):
    """Import `graph_def` into the default graph; ValueError describes bad input, as TF's.

    `input_map` maps tensor names of `graph_def` ("x:0", "x") to Tensors of this graph;
    `return_elements` names tensors ("y:0") or ops ("y") to return, in order.
    """
    if isinstance(graph_def, (bytes, bytearray)):
        try:
            graph_def = parse_graph_def(graph_def)
        except errors.InvalidArgumentError as e:
            raise ValueError(str(e)) from e
    if not isinstance(graph_def, graph_pb2.GraphDef) and hasattr(graph_def, "SerializeToString"):
        try:  # another library's GraphDef class (TensorFlow's): the same wire format
            graph_def = parse_graph_def(graph_def.SerializeToString())
        except errors.InvalidArgumentError as e:
            raise ValueError(str(e)) from e
    if not isinstance(graph_def, graph_pb2.GraphDef):
        raise TypeError(f"graph_def must be a GraphDef proto, not {type(graph_def).__name__}.")
    input_map = {_canonical(k): _check_mapped(k, v) for k, v in (input_map or {}).items()}
    graph = ops.get_default_graph()
    _check_ops_registered(graph_def)
    try:
        _check_graph_def(graph_def, input_map)
    except errors.InvalidArgumentError as e:
        raise ValueError(str(e)) from e
    if graph_def.library.function or graph_def.library.gradient:
        try:  # functions keep their names (TF does not prefix them)
            graph._library.add_library(graph_def.library)
        except errors.InvalidArgumentError as e:
            raise ValueError(str(e)) from e
    with ops.name_scope(name, "import", list(input_map.values())) as scope:
        prefix = scope
        try:
            with paused_gc():
                new_ops = _import_nodes(graph, graph_def, input_map, prefix)
        except errors.InvalidArgumentError as e:
            raise ValueError(str(e)) from e
        except MemoryError:
            raise errors.ResourceExhaustedError(
                None, None, f"OOM importing a GraphDef of {len(graph_def.node)} nodes") from None
    if return_elements is None:
        return None
    result = []
    for element in return_elements:
        key = prefix + element
        try:
            result.append(graph.as_graph_element(key if ":" in element else key,
                                                 allow_tensor=":" in element))
        except (KeyError, ValueError) as e:
            raise ValueError(f"Requested return_element {element!r} not found in graph_def.") \
                from e
    del new_ops
    return result


def _check_ops_registered(graph_def) -> None:
    """NotFoundError (TF's class) naming every op type of the GraphDef that aioflow does not
    have, with the nodes using it: all of them at once, not the first only as TF. A node
    whose op names a function of the GraphDef's library is a call, not an unknown op."""
    functions = {f.signature.name for f in graph_def.library.function}
    unknown: dict[str, list[str]] = {}
    for node in graph_def.node:
        if node.op not in functions and op_def_registry.get_registration(node.op) is None:
            unknown.setdefault(node.op, []).append(node.name)
    if not unknown:
        return
    parts = []
    for op_type in sorted(unknown):
        names = unknown[op_type]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        parts.append(f"'{op_type}' (node{'s' if len(names) > 1 else ''} {shown})")
    raise errors.NotFoundError(
        None, None, f"Op type not registered {', '.join(parts)} in binary running aioflow. "
                    "docs/op_coverage.md lists the ops aioflow implements.")


def _check_graph_def(graph_def, input_map: dict) -> None:
    """What TF checks before it builds a node: versions, names, input lists, edges and
    cycles, and input_map keys that name no output of the GraphDef."""
    graph_def_checks.check_versions(graph_def.versions)
    by_name = graph_def_checks.index_nodes(graph_def.node, allow_internal_ops=False)
    mapped = {node_def_util.parse_input(k) for k in input_map}
    graph_def_checks.check_edges(graph_def.node, mapped)
    if not mapped:
        return
    used = {node_def_util.parse_input(text) for node in graph_def.node for text in node.input}
    missing = sorted(key for key in mapped - used if not _names_output(by_name, *key))
    if missing:
        listed = ", ".join(f"^{n}" if i < 0 else f"{n}:{i}" for n, i in missing)
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                         f"[{listed}]")


def _names_output(by_name: dict, name: str, index: int) -> bool:
    """Whether node `name` of the GraphDef exists and has output `index` (as TF, a node
    whose op is unknown is taken to have it: the import fails on the op instead)."""
    node = by_name.get(name)
    if node is None:
        return False
    reg = op_def_registry.get_registration(node.op)
    if index < 0 or reg is None:
        return True
    try:
        return index < node_def_util.num_outputs(node, reg.op_def)
    except errors.InvalidArgumentError:
        return True


def parse_graph_def(data: bytes) -> graph_pb2.GraphDef:
    """Parse serialized GraphDef bytes; InvalidArgumentError for anything that is not one."""
    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(bytes(data))
    except Exception as e:  # protobuf's DecodeError and friends
        raise errors.InvalidArgumentError(
            None, None, f"Unable to parse GraphDef ({len(data)} bytes): not a valid serialized "
                        f"GraphDef protobuf, or truncated ({e})") from e
    return graph_def


def _canonical(key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"input_map keys must be strings, got {type(key).__name__}")
    if key.startswith("^") or ":" in key:
        return key
    return key + ":0"


def _check_mapped(key, value):
    if isinstance(value, ops.Operation):
        if not key.startswith("^"):
            raise ValueError(f"input_map entry {key!r} maps a tensor to an Operation")
        return value
    if not isinstance(value, ops.Tensor):
        raise TypeError(f"input_map values must be Tensors, got {type(value).__name__} for {key!r}")
    return value


def _import_nodes(graph: ops.Graph, graph_def, input_map: dict, prefix: str):
    """Create all ops first (outputs known from attrs), then wire inputs, then shapes."""
    created: dict[str, ops.Operation] = {}
    node_defs = []
    colocations = []  # (op, the names of the ops it is colocated with)
    scope_class = _scope_class(graph)
    prefix_names = None  # the GraphDef's node names, once, for prefixing `_class`
    for node in _own_copy(graph_def):
        reg = op_def_registry.get_registration(node.op)
        fdef = graph._library.find(node.op) if reg is None else None
        if reg is None and fdef is None:
            raise errors.InvalidArgumentError(
                node, None, f"Op type not registered '{node.op}' in binary running aioflow. "
                            f"(node {node.name})")
        # A direct call of a library function: the function's signature is its OpDef.
        op_def = reg.op_def if reg is not None else fdef.signature
        if node_def_util.defaulted_attrs(op_def):
            node_def_util.add_default_attrs(node, op_def)
        # (names and input order: checked for every node by _check_graph_def)
        node_def_util.validate_node_def(node, op_def, allow_internal_ops=False,
                                        names_checked=True)
        in_types, out_enums = node_def_util.arg_types(node, op_def)
        out_types = [dtypes.as_dtype(t) for t in out_enums]
        new_name = prefix + node.name
        if graph._get_operation_or_none(new_name) is not None:
            raise errors.InvalidArgumentError(
                node, None, f"Node name '{new_name}' already exists in the Graph")
        node_attrs = node.attr
        attrs = {k: node_attrs[k] for k in node_attrs}  # (keys, then values: no ItemsView)
        if scope_class is not None:
            # Inside `colocate_with`: the scope's groups replace the node's own (as TF's
            # _create_op_helper does for imported ops).
            node_attrs["_class"].CopyFrom(scope_class)
            attrs["_class"] = node_attrs["_class"]
        elif "_class" in attrs and prefix:
            if prefix_names is None:
                prefix_names = {n.name for n in graph_def.node}
            attrs["_class"] = _prefixed_class(attrs["_class"], prefix, prefix_names)
        op = ops.Operation(graph, graph._next_id, new_name, node.op, [], out_types, attrs,
                           node.device, op_def, [], traceback=False)  # (not made by code)
        op._checked = True  # validate_node_def passed above
        graph._add_op(op)
        colocated = _colocation_names(attrs, new_name)
        if colocated:
            # As TF's _ProcessNewOps: a colocated op drops its own device (and the device
            # scopes) for the device of the first op it is colocated with that has one,
            # below, if any.
            op._device = ""
            colocations.append((op, colocated))
        elif graph._device_stack or node.device:
            # As TF's _ProcessNewOps: the node's device inside the device scopes, canonical.
            op._device = device_spec.merge_device(graph._device_for_new_op(op), node.device)
        created[node.name] = op
        # (The types as the session would compute them, for a registered op.)
        types = (in_types, out_enums) if reg is not None else None
        node_defs.append((node, op_def, op, in_types, types))
    for op, names in colocations:
        # The device of the first op of its colocation list that has one, if any (TF:
        # several devices in a group are the placer's to reconcile or refuse).
        for name in names:
            target = graph._get_operation_or_none(name)
            if target is not None and target.device:
                op._device = device_spec.canonical(target.device)
                break
    for node, op_def, op, expected, types in node_defs:
        data_index = 0
        # Whether `node` reads as the op's NodeDef would be written (Operation._node_def):
        # same name, inputs as the op's tensors write them, controls sorted and distinct.
        canonical = not prefix
        last_control = ""
        for text in node.input:
            if ":" in text or text.startswith("^"):
                src_name, index = node_def_util.parse_input(text)
            else:  # (the common case, without a call)
                src_name, index = text, 0
            if index < 0:
                mapped = input_map.get(text)
                src = mapped if mapped is not None else created.get(src_name)
                if src is None:
                    raise errors.InvalidArgumentError(
                        node, None, f"Node '{node.name}': Unknown input node '{text}'")
                op._add_control_input(src)
                canonical = canonical and mapped is None and src_name > last_control
                last_control = src_name
                continue
            mapped = input_map.get(f"{src_name}:{index}")
            if mapped is not None:
                tensor = mapped
                canonical = False
            else:
                canonical = canonical and (text == src_name if index == 0
                                           else text == f"{src_name}:{index}")
                src = created.get(src_name)
                if src is None:
                    raise errors.InvalidArgumentError(
                        node, None, f"Node '{node.name}': Unknown input node '{text}'")
                if index >= len(src._outputs):
                    raise errors.InvalidArgumentError(
                        node, None, f"Node '{node.name}': Connecting to invalid output {index} "
                                    f"of source node {src_name} which has "
                                    f"{len(src._outputs)} outputs.")
                tensor = src._outputs[index]
            if data_index >= len(expected):
                raise errors.InvalidArgumentError(
                    node, None, f"NodeDef expected inputs '{len(expected)}' do not match "
                                f"{_count_data(node)} inputs specified; Op<name={op_def.name}>; "
                                f"NodeDef: {node_def_util.summarize(node)}")
            if not node_def_util.types_compatible(expected[data_index],
                                                  tensor.dtype.as_datatype_enum):
                raise errors.InvalidArgumentError(
                    node, None, f"Input {data_index} of node {op.name} was passed "
                                f"{tensor.dtype.name} from {tensor.name} incompatible with "
                                f"expected {dtypes.as_dtype(expected[data_index]).name}.")
            op._add_input(tensor)
            data_index += 1
        if data_index != len(expected):
            raise errors.InvalidArgumentError(
                node, None, f"NodeDef expected inputs '{len(expected)}' do not match "
                            f"{data_index} inputs specified; Op<name={op_def.name}>; "
                            f"NodeDef: {node_def_util.summarize(node)}")
        if canonical:  # (`node` is the import's own copy: it may be given away)
            if node.device != op._device:
                node.device = op._device
            op._node_def = node
            op._node_types = types  # (None for a function call: the session converts it)
    new_ops = [entry[2] for entry in node_defs]
    _infer_shapes(new_ops)
    return new_ops


def _count_data(node) -> int:
    return sum(1 for i in node.input if not i.startswith("^"))


def _own_copy(graph_def):
    """The import's own copy of the GraphDef's nodes (defaults are added to it, and an op
    left as imported keeps its NodeDef): one C call (a CopyFrom per node is 8x slower),
    or chunks of nodes for a graph so large that one call would keep the GIL from other
    threads longer than Python's switch interval."""
    copy = type(graph_def)()
    nodes = graph_def.node
    if len(nodes) <= _COPY_WHOLE_NODES:
        copy.CopyFrom(graph_def)
    else:
        for start in range(0, len(nodes), _COPY_CHUNK):
            copy.node.extend(nodes[start:start + _COPY_CHUNK])
    return copy.node


# About 0.25 µs a node in one call: up to this many, under Python's 5 ms switch interval.
_COPY_WHOLE_NODES = 16384
_COPY_CHUNK = 1000


def _colocation_names(attrs: dict, own_name: str) -> list[str]:
    """The names in an op's `_class: loc:@name` colocation list, in order, but its own."""
    value = attrs.get("_class")
    if value is None:
        return []
    names = [s[5:].decode(errors="surrogateescape") for s in value.list.s
             if s.startswith(b"loc:@")]
    return [name for name in names if name != own_name]


def _scope_class(graph: ops.Graph):
    """The `_class` value of the graph's colocation scope (its groups, sorted), or None."""
    if not graph._colocation_stack:
        return None
    groups = set()
    for other in graph._colocation_stack:
        groups.update(ops._colocation_groups(other))
    value = attr_value_pb2.AttrValue()
    value.list.s.extend(sorted(groups))
    return value


def _prefixed_class(value, prefix: str, names: set):
    out = type(value)()
    out.CopyFrom(value)
    del out.list.s[:]
    for s in value.list.s:
        if s.startswith(b"loc:@") and s[5:].decode(errors="replace") in names:
            s = b"loc:@" + prefix.encode() + s[5:]
        out.list.s.append(s)
    return out


def _infer_shapes(new_ops: list[ops.Operation]) -> None:
    """Run shape functions in topological order; loop back edges are left unknown."""
    position = {id(op): i for i, op in enumerate(new_ops)}
    pending = [0] * len(new_ops)
    consumers: list[list[int] | None] = [None] * len(new_ops)  # by position
    for i, op in enumerate(new_ops):
        count = 0
        for t in op._inputs:
            d = position.get(id(t._op))
            if d is not None and t._op._type != "NextIteration":
                count += 1
                if consumers[d] is None:
                    consumers[d] = [i]
                else:
                    consumers[d].append(i)
        pending[i] = count
    ready = [i for i, count in enumerate(pending) if count == 0]
    set_shapes = ops._set_shapes_for_outputs
    while ready:
        i = ready.pop()
        op = new_ops[i]
        try:
            set_shapes(op)
        except (ValueError, TypeError) as e:
            raise ValueError(f"Shape inference failed for node {op.name} ({op.type}): {e}") \
                from e
        for c in consumers[i] or ():
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
