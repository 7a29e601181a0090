"""The Python graph API: Graph, Operation and Tensor, as in TensorFlow 1.x.

A Graph is built by Python code (usually through the builders in aioflow.ops) and
serialised to a GraphDef for the Session. The default-graph stack lives in a
contextvar, so concurrent asyncio tasks each see their own default graph.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from aioflow.framework import (
    device_spec,
    dtypes,
    errors,
    node_def_util,
    op_def_registry,
    tensor_shape,
)
from aioflow.framework.attr_value import attr_value_to_python
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.proto import attr_value_pb2, graph_pb2, node_def_pb2, versions_pb2

# The GraphDef version this code writes (TF 2.21 writes producer 2xxx; consumers only
# compare against min_consumer).
GRAPH_DEF_VERSION = 1994
GRAPH_DEF_VERSION_MIN_CONSUMER = 0

_AIOFLOW_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")


def _user_frame() -> tuple[str, int, str] | None:
    """Where user code created an op: the first frame outside the aioflow package."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_AIOFLOW_DIR) or "/tests/" in filename:
            return (filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


class Tensor:
    """A symbolic handle to one output of an Operation."""

    # Make numpy defer to our operator overloads (x_np + tensor -> Tensor.__radd__).
    __array_priority__ = 100

    def __init__(self, op: Operation, value_index: int, dtype: dtypes.DType):
        self._op = op
        self._value_index = value_index
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = tensor_shape.unknown_shape()
        self._consumers: list[Operation] = []

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Refine the static shape; ValueError if it is incompatible with what is known."""
        self._shape = self._shape.merge_with(tensor_shape.as_shape(shape))

    def consumers(self) -> list[Operation]:
        return list(self._consumers)

    def _as_node_def_input(self) -> str:
        return self._op.name if self._value_index == 0 else self.name

    def __repr__(self) -> str:
        return f"<af.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__

    # TF 1.x semantics: tensors compare and hash by identity, so they can key feed_dicts.
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __bool__(self):
        raise TypeError(
            "Using a `af.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` "
            "instead of `if t:` to test if a tensor is defined, and use af.cond to execute "
            "subgraphs conditioned on the value of a tensor."
        )

    def __iter__(self):
        shape = self._shape
        if shape.rank is None or shape.rank == 0 or shape.dims[0].value is None:
            raise TypeError("Cannot iterate over a tensor with unknown first dimension.")
        return iter(_builders["unstack"](self))

    def __len__(self):
        raise TypeError(
            f"len is not well defined for symbolic Tensors. ({self.name}) Please call "
            "`x.shape` rather than `len(x)` for shape information."
        )

    def __array__(self, *args, **kwargs):
        raise NotImplementedError(
            f"Cannot convert a symbolic af.Tensor ({self.name}) to a numpy array."
        )

    def eval(self, feed_dict=None, session=None):
        """TF 1.x's `t.eval()`: this tensor's value from `session` or the default session,
        which must be a blocking one (tf.Session of aioflow.compat.v1); with the awaitable
        af.Session, `await sess.run(t)`."""
        return _run_in_session(self, feed_dict, session, "evaluate tensor using `eval()`",
                               "eval")

    @classmethod
    def _override_operator(cls, operator: str, func: Callable) -> None:
        """Install an operator overload (used by aioflow.ops.math_ops)."""
        setattr(cls, operator, func)


def _checked_attrs(name: str, op_type: str, inputs, attrs: dict, op_def) -> dict:
    """`attrs` with the OpDef's defaults added, validated as the NodeDef they make (raw
    attrs given to Graph.create_op); ValueError with TF's words when they do not fit."""
    node_def = node_def_pb2.NodeDef(name=name, op=op_type, input=[t.name for t in inputs])
    for key, value in attrs.items():
        node_def.attr[key].CopyFrom(value)
    node_def_util.add_default_attrs(node_def, op_def)
    try:
        node_def_util.validate_node_def(node_def, op_def)
    except errors.InvalidArgumentError as e:
        raise ValueError(e.message) from None
    return dict(node_def.attr.items())


class Operation:
    """A node of a Graph: an op type, inputs, attrs, a device, and outputs."""

    def __init__(self, graph: Graph, op_id: int, name: str, op_type: str,
                 inputs: list[Tensor], output_types: list[dtypes.DType],
                 attrs: dict[str, attr_value_pb2.AttrValue], device: str,
                 op_def, control_inputs: list[Operation], traceback: bool = True):
        """`traceback`: record where user code created the op (False: it was not, e.g.
        an imported node)."""
        self._graph = graph
        self._id = op_id
        self._name = name
        self._type = op_type
        self._inputs = list(inputs)
        self._attrs = dict(attrs)
        self._device = device
        self._op_def = op_def
        self._control_inputs: list[Operation] = []
        self._outputs = [Tensor(self, i, t) for i, t in enumerate(output_types)]
        self._traceback = _user_frame() if traceback else None
        self._control_flow_context = None
        self._control_outputs: list[Operation] = []
        # Its NodeDef passed validate_node_def's checks (built from the OpDef by a
        # builder, or validated on import): the session need not check it again.
        self._checked = False
        # Its NodeDef as `node_def` writes it, when one is at hand (import_graph_def's
        # copy, never mutated after): a session extends with it as it is. Every mutation
        # below drops it. With it, `_node_types`: its (input, output) DataType enums as
        # node_def_util.arg_types gives them for that NodeDef, or None.
        self._node_def = None
        self._node_types = None
        for t in self._inputs:
            t._consumers.append(self)
        self._add_control_inputs(control_inputs)

    # -- read access -----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._type

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def device(self) -> str:
        return self._device

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(self._inputs)

    @property
    def outputs(self) -> list[Tensor]:
        return list(self._outputs)

    @property
    def control_inputs(self) -> list[Operation]:
        return list(self._control_inputs)

    @property
    def op_def(self):
        return self._op_def

    @property
    def traceback(self):
        return self._traceback

    def values(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    def get_attr(self, name: str) -> Any:
        """The attr's Python value (DType, TensorShape, ndarray, list, ...)."""
        if name not in self._attrs:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.")
        return attr_value_to_python(self._attrs[name])

    def _get_attr_proto(self, name: str):
        return self._attrs.get(name)

    @property
    def node_def(self) -> node_def_pb2.NodeDef:
        node = node_def_pb2.NodeDef(name=self._name, op=self._type, device=self._device)
        node.input.extend(t._as_node_def_input() for t in self._inputs)
        node.input.extend("^" + op.name for op in self._control_inputs)
        for key, value in self._attrs.items():
            node.attr[key].CopyFrom(value)
        return node

    # -- mutation used by builders (control flow, control dependencies) --------------
    def _set_attr(self, name: str, value: attr_value_pb2.AttrValue) -> None:
        self._attrs[name] = value
        self._node_def = None

    def _set_device(self, device: str) -> None:
        self._device = device_spec.canonical(device)
        self._node_def = None

    def _add_outputs(self, types: list, shapes: list) -> None:
        """Append outputs (cond_v2 / while_v2 rewrite a forward op to output more)."""
        for dtype, shape in zip(types, shapes, strict=True):
            t = Tensor(self, len(self._outputs), dtype)
            t.set_shape(shape)
            self._outputs.append(t)
        self._node_def = None
        self._node_types = None

    def _add_control_input(self, op: Operation) -> None:
        self._add_control_inputs([op])

    def _add_control_inputs(self, ops: Iterable[Operation]) -> None:
        for op in ops:
            if not isinstance(op, Operation):
                raise TypeError(f"op must be an Operation: {op!r}")
            if op not in self._control_inputs:
                self._control_inputs.append(op)
                op._control_outputs.append(self)
                self._node_def = None

    def _remove_all_control_inputs(self) -> None:
        for op in self._control_inputs:
            op._control_outputs.remove(self)
        self._control_inputs = []
        self._node_def = None

    def _update_input(self, index: int, tensor: Tensor) -> None:
        """Replace data input `index` (how while_loop closes its back edge)."""
        old = self._inputs[index]
        old._consumers.remove(self)
        self._inputs[index] = tensor
        tensor._consumers.append(self)
        self._node_def = None

    def _add_input(self, tensor: Tensor) -> None:
        self._inputs.append(tensor)
        tensor._consumers.append(self)
        self._node_def = None

    def __repr__(self) -> str:
        return f"<af.Operation '{self._name}' type={self._type}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def run(self, feed_dict=None, session=None):
        """TF 1.x's `op.run()` in `session` or the default (blocking) session."""
        _run_in_session(self, feed_dict, session, "execute operation using `run()`", "run")


class _ControlDependencies:
    """One `control_dependencies` scope: its control inputs and the ops created in it."""

    def __init__(self, control_inputs: list[Operation] | None):
        self.control_inputs = control_inputs
        self.seen: set[int] = set()


class Graph:
    """A TensorFlow-1-style graph of Operations."""

    #: A function graph being built takes ops whose inputs are in other graphs (TF's
    #: building_function): they are captured. tf.data's FuncGraph does not set it.
    building_function = False

    def __init__(self):
        self._ops_by_id: dict[int, Operation] = {}
        self._ops_by_name: dict[str, Operation] = {}
        self._next_id = 1
        self._names_in_use: dict[str, int] = {}
        self._name_stack = ""
        self._control_dependencies_stack: list[_ControlDependencies] = []
        self._device_stack: list[str | Callable] = []
        self._colocation_stack: list[Operation] = []
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._control_flow_context = None
        self._unfeedable: set[Tensor] = set()
        self._unfetchable: set[Operation] = set()
        self.seed: int | None = None
        self._last_loss_reduction = None
        self._versions = versions_pb2.VersionDef(
            producer=GRAPH_DEF_VERSION, min_consumer=GRAPH_DEF_VERSION_MIN_CONSUMER)
        # The functions the graph's ops may call (GraphDef.library), kept by
        # import_graph_def and written by as_graph_def.
        self._library = FunctionLibraryDefinition()
        # op type -> the op type whose gradient function it uses (gradient_override_map).
        self._gradient_override_map: dict[str, str] = {}

    # -- default graph ---------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph in this context (task- and thread-local)."""
        token = _default_graph_stack.set(_default_graph_stack.get() + (self,))
        try:
            yield self
        finally:
            _default_graph_stack.reset(token)

    # -- basic facts -----------------------------------------------------------------
    @property
    def version(self) -> int:
        """Grows by one with each op added; `as_graph_def(from_version=v)` gives the rest."""
        return self._next_id - 1

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        """Make the graph read-only: adding an op raises RuntimeError afterwards."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    @property
    def graph_def_versions(self) -> versions_pb2.VersionDef:
        return self._versions

    def get_operations(self) -> list[Operation]:
        return list(self._ops_by_id.values())

    # -- naming ----------------------------------------------------------------------
    def get_name_scope(self) -> str:
        return self._name_stack

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` under the current scope, with `_N` appended if it is taken (case-blind)."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{count - 1}"
        return name

    def _mark_name_used(self, name: str) -> None:
        key = name.lower()
        self._names_in_use[key] = self._names_in_use.get(key, 0) + 1

    @contextlib.contextmanager
    def name_scope(self, name: str | None):
        """Open a name scope; yields its prefix ("outer/inner/"). A name ending in "/" is
        taken as an absolute scope; None or "" resets to the top level."""
        old = self._name_stack
        if not name:
            new = ""
            yielded = ""
        elif name.endswith("/"):
            if not _VALID_SCOPE_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = name[:-1]
            yielded = name
        else:
            if not (_VALID_OP_NAME.match(name) if not old else _VALID_SCOPE_NAME.match(name)):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = self.unique_name(name)
            yielded = new + "/"
        self._name_stack = new
        try:
            yield yielded
        finally:
            self._name_stack = old

    # -- control dependencies, devices, colocation -------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created inside run only after `control_inputs`; None clears outer scopes."""
        if control_inputs is None:
            # As TF: a new stack, outside any control-flow context.
            saved = self._control_dependencies_stack
            saved_context = self._control_flow_context
            self._control_dependencies_stack = []
            self._control_flow_context = None
            try:
                yield
            finally:
                self._control_dependencies_stack = saved
                self._control_flow_context = saved_context
            return
        ops: list[Operation] = []
        current = {id(c) for controller in self._control_dependencies_stack
                   for c in controller.control_inputs or ()}
        for c in control_inputs:
            op = c.op if isinstance(c, Tensor) else c
            if hasattr(op, "_as_control_input"):
                op = op._as_control_input()
            if isinstance(op, str):
                op = self.as_graph_element(op)
                op = op.op if isinstance(op, Tensor) else op
            if not isinstance(op, Operation):
                raise TypeError(f"Can not convert a {type(c).__name__} into a Operation.")
            self._check_same_graph(op)
            if id(op) not in current:
                # TF marks every op used as a manual control dependency.
                current.add(id(op))
                ops.append(op)
                op._set_attr("_has_manual_control_dependencies",
                             attr_value_pb2.AttrValue(b=True))
        controller = _ControlDependencies(ops)
        self._control_dependencies_stack.append(controller)
        try:
            yield
        finally:
            self._control_dependencies_stack.pop()

    def _control_dependencies_for_inputs(self, input_ops: list[Operation]) -> list[Operation]:
        """The control inputs a new op gets: those of every enclosing scope that none of its
        data inputs was created in, minus ops that already feed it data."""
        result: list[Operation] = []
        for controller in self._control_dependencies_stack:
            if any(id(op) in controller.seen for op in input_ops):
                continue
            for c in controller.control_inputs:
                if c not in input_ops and c not in result:
                    result.append(c)
        return result

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Place ops created inside on this device; nested scopes merge, None clears."""
        if device_name_or_function is None:
            saved = self._device_stack
            self._device_stack = []
            try:
                yield
            finally:
                self._device_stack = saved
            return
        if not callable(device_name_or_function):
            device_spec.DeviceSpec.from_string(device_name_or_function)  # validate early
        self._device_stack.append(device_name_or_function)
        try:
            yield
        finally:
            self._device_stack.pop()

    def _device_for_new_op(self, op: Operation) -> str:
        device = ""
        for entry in self._device_stack:
            spec = entry(op) if callable(entry) else entry
            device = device_spec.merge_device(device, spec or "")
        return device

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Ops created inside share `op`'s colocation group (the `_class` attr) and device."""
        if op is None:
            saved = self._colocation_stack
            self._colocation_stack = []
            try:
                yield
            finally:
                self._colocation_stack = saved
            return
        op = op.op if isinstance(op, Tensor) else op
        saved_devices = self._device_stack
        self._device_stack = []
        saved_stack = self._colocation_stack
        if ignore_existing:
            self._colocation_stack = []
        self._colocation_stack = self._colocation_stack + [op]
        try:
            yield
        finally:
            self._device_stack = saved_devices
            self._colocation_stack = saved_stack

    def _apply_colocation(self, op: Operation) -> None:
        if not self._colocation_stack:
            return
        groups: list[bytes] = []
        for other in self._colocation_stack:
            for g in _colocation_groups(other):
                if g not in groups:
                    groups.append(g)
        value = attr_value_pb2.AttrValue()
        value.list.s.extend(sorted(groups))
        op._set_attr("_class", value)
        # The innermost colocation op that has a device gives it (as TF).
        for other in reversed(self._colocation_stack):
            if other.device:
                op._device = other.device
                break

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Ops of a mapped type created inside take the gradient function registered for
        the type they map to (TF: the `_gradient_op_type` attr names it)."""
        if not isinstance(op_type_map, dict):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
        saved: dict[str, str] = {}
        for op_type, mapped in op_type_map.items():
            if not (isinstance(op_type, str) and isinstance(mapped, str)):
                raise TypeError("op_type_map must be a dictionary mapping strings to strings")
            if op_type in self._gradient_override_map:
                saved[op_type] = self._gradient_override_map[op_type]
            self._gradient_override_map[op_type] = mapped
        try:
            yield
        finally:
            for op_type in op_type_map:
                if op_type in saved:
                    self._gradient_override_map[op_type] = saved[op_type]
                else:
                    del self._gradient_override_map[op_type]

    # -- collections -----------------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._check_not_finalized()
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value) -> None:
        for name in [names] if isinstance(names, str) else set(names):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [v for v in items if pattern.match(getattr(v, "name", "") or "")]

    def get_all_collection_keys(self) -> list[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    # -- lookup ----------------------------------------------------------------------
    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=True, allow_operation=False)

    def _get_operation_or_none(self, name: str) -> Operation | None:
        return self._ops_by_name.get(name)

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolve a Tensor, Operation or name ("op", "op:0") to an element of this graph;
        an object with `_as_graph_element` (a Variable) resolves to what it gives (TF)."""
        if not isinstance(obj, (Tensor, Operation, str)) and hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.op.graph is not self:  # TF's text
                raise ValueError(f"Tensor {obj!r} is not an element of this graph.")
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError(f"Operation {obj!r} is not an element of this graph.")
            return obj
        if isinstance(obj, str):
            name = obj
            if ":" in name:
                if not allow_tensor:
                    raise ValueError(f"Name '{name}' appears to refer to a Tensor, not a "
                                     "Operation.")
                op_name, _, index = name.partition(":")
                try:  # as TF: exactly one ":", then what Python's int() reads
                    if ":" in index:
                        raise ValueError
                    index = int(index)
                except ValueError:
                    raise ValueError(f"The name '{name}' looks a like a Tensor name, but is not "
                                     "a valid one. Tensor names must be of the form "
                                     "\"<op_name>:<output_index>\".") from None
                op = self._ops_by_name.get(op_name)
                if op is None:
                    raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. "
                                   f"The operation, '{op_name}', does not exist in the graph.")
                if index >= len(op._outputs):
                    raise KeyError(
                        f"The name '{name}' refers to a Tensor which does not exist. The "
                        f"operation, '{op_name}', exists but only has {len(op._outputs)} "
                        "outputs.")
                return op._outputs[index]
            op = self._ops_by_name.get(name)
            if not allow_operation:
                what = ("refers to an Operation" if op is not None
                        else "looks like an (invalid) Operation name")
                raise ValueError(
                    f"The name '{name}' {what}, not a Tensor. Tensor names must "
                    "be of the form \"<op_name>:<output_index>\".")
            if op is None:
                raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
            return op
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor),
                                             ("Operation", allow_operation)) if ok)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a {kinds}.")

    def _check_same_graph(self, op: Operation) -> None:
        if op.graph is not self:
            raise ValueError(f"{op!r} must be from the same graph as {self!r}.")

    # -- creating ops ----------------------------------------------------------------
    def create_op(self, op_type: str, inputs: list[Tensor], dtypes_=None, input_types=None,
                  name: str | None = None, attrs: dict | None = None, op_def=None,
                  compute_shapes: bool = True, compute_device: bool = True,
                  checked: bool = False) -> Operation:
        """Add an op. `name` ending in "/" is a scope name already made unique.
        `checked`: the caller built the attrs from the OpDef (a builder); else they get
        the OpDef's defaults and are validated here (TF's ValueError from create_op)."""
        self._check_not_finalized()
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Input #{inputs.index(t)} is not a tensor: {t!r}")
            if t.graph is not self:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the op "
                                 f"being created ({name or op_type}).")
        if name is None:
            name = self.unique_name(op_type)
        elif name.endswith("/"):
            name = name[:-1]
        else:
            name = self.unique_name(name)
        if not _VALID_OP_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid node name")
        if op_def is None:
            op_def = op_def_registry.get(op_type)
        if not checked:
            attrs = _checked_attrs(name, op_type, inputs, attrs or {}, op_def)
        input_ops = [t.op for t in inputs]
        control_inputs = self._control_dependencies_for_inputs(input_ops)
        op = Operation(self, self._next_id, name, op_type, inputs, list(dtypes_ or []),
                       attrs or {}, "", op_def, control_inputs)
        op._checked = True
        self._add_op(op)
        mapped = self._gradient_override_map.get(op_type)
        if mapped is not None:
            op._set_attr("_gradient_op_type", attr_value_pb2.AttrValue(s=mapped.encode()))
        if compute_device:
            self._apply_device_and_colocation(op)
        if compute_shapes:
            _set_shapes_for_outputs(op)
        for controller in self._control_dependencies_stack:
            controller.seen.add(id(op))
        if self._control_flow_context is not None:
            op._control_flow_context = self._control_flow_context
            self._control_flow_context.add_op(op)
        return op

    def _apply_device_and_colocation(self, op: Operation) -> None:
        if self._device_stack:
            op._device = self._device_for_new_op(op)
        self._apply_colocation(op)

    def _add_op(self, op: Operation) -> None:
        if op.name in self._ops_by_name:
            raise ValueError(f"Duplicate node name in graph: '{op.name}'")
        self._ops_by_id[op._id] = op
        self._ops_by_name[op.name] = op
        self._next_id += 1
        key = op.name.lower()
        if key not in self._names_in_use:
            self._names_in_use[key] = 1

    # -- feeding and fetching --------------------------------------------------------------
    def prevent_feeding(self, tensor: Tensor) -> None:
        """Mark `tensor` as not feedable (values inside a while loop)."""
        self._unfeedable.add(tensor)

    def is_feedable(self, tensor: Tensor) -> bool:
        return tensor not in self._unfeedable

    def prevent_fetching(self, op: Operation) -> None:
        """Mark `op` (and its outputs) as not fetchable (ops inside a while loop)."""
        self._unfetchable.add(op)

    def is_fetchable(self, tensor_or_op) -> bool:
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    def _get_control_flow_context(self):
        return self._control_flow_context

    def _set_control_flow_context(self, ctx) -> None:
        self._control_flow_context = ctx

    # -- serialisation ---------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None,
                     add_shapes: bool = False) -> graph_pb2.GraphDef:
        """The GraphDef of this graph (with its function library); with `from_version`,
        only ops added after it."""
        graph_def = graph_pb2.GraphDef()
        graph_def.versions.CopyFrom(self._versions)
        if self._library:
            graph_def.library.CopyFrom(self._library.to_proto())
        for op_id, op in self._ops_by_id.items():
            if from_version is not None and op_id <= from_version:
                continue
            node = graph_def.node.add()
            node.CopyFrom(op.node_def)
            if len(op._control_inputs) > 1:
                # TF's ToGraphDef sorts control inputs by name.
                n_data = len(op._inputs)
                controls = sorted(node.input[n_data:])
                del node.input[n_data:]
                node.input.extend(controls)
            if add_shapes and op._outputs:
                shapes = node.attr["_output_shapes"].list.shape
                shapes.extend(t.shape.as_proto() for t in op._outputs)
        return graph_def

    def __repr__(self) -> str:
        return f"<af.Graph ops={len(self._ops_by_id)} at {id(self):#x}>"


def _colocation_groups(op: Operation) -> list[bytes]:
    value = op._attrs.get("_class")
    if value is not None and value.list.s:
        return [s for s in value.list.s if s.startswith(b"loc:@")]
    return [b"loc:@" + op.name.encode()]


def _set_shapes_for_outputs(op: Operation) -> None:
    reg = op_def_registry.get_registration(op.type)
    if reg is None or reg.shape_fn is None:
        return
    shapes = reg.shape_fn(op)
    if shapes is None:
        return
    for t, s in zip(op._outputs, shapes, strict=False):
        if s is not None:
            t._shape = tensor_shape.as_shape(s)


# -- the default-graph stack ---------------------------------------------------------
_default_graph_stack: contextvars.ContextVar[tuple[Graph, ...]] = contextvars.ContextVar(
    "aioflow_default_graph_stack", default=())
_global_default_graph: Graph | None = None


def get_default_graph() -> Graph:
    """The innermost `as_default()` graph of this context, else the global default graph."""
    stack = _default_graph_stack.get()
    if stack:
        return stack[-1]
    global _global_default_graph
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


# -- the default-session stack (TF 1.x's `with sess.as_default()`, t.eval()) -----------
_default_session_stack: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "aioflow_default_session_stack", default=())


def get_default_session():
    """The innermost session made default in this context (`with sess.as_default()`, or a
    compat.v1 `with tf.Session() as sess`), else None."""
    stack = _default_session_stack.get()
    return stack[-1] if stack else None


@contextlib.contextmanager
def default_session(session):
    """Make `session` the default session inside the block."""
    token = _default_session_stack.set(_default_session_stack.get() + (session,))
    try:
        yield session
    finally:
        _default_session_stack.reset(token)


def _run_in_session(element, feed_dict, session, what: str, method: str):
    """Run a Tensor or Operation in `session` or the default session, with TF's errors."""
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(f"Cannot {what}: No default session is registered. Use `with "
                             f"sess.as_default()` or pass an explicit session to "
                             f"`{method}(session=sess)`")
    if session.graph is not element.graph:
        kind = "tensor" if isinstance(element, Tensor) else "operation"
        raise ValueError(f"Cannot use the given session to {what.split(' using')[0]}: the "
                         f"{kind}'s graph is different from the session's graph.")
    if inspect.iscoroutinefunction(session.run):
        raise TypeError(f"Cannot {what} in an awaitable af.Session: use `await "
                        f"sess.run(...)`, or a blocking session (af.SyncSession, or tf.Session "
                        f"of aioflow.compat.v1).")
    return session.run(element, feed_dict)


def reset_default_graph() -> None:
    """Replace the global default graph with a new, empty one."""
    if _default_graph_stack.get():
        raise AssertionError(
            "Do not use af.reset_default_graph() to clear nested graphs. If you need a "
            "cleared graph, exit the nesting and create a new graph.")
    global _global_default_graph
    _global_default_graph = Graph()


@contextlib.contextmanager
def name_scope(name: str | None, default_name: str | None = None, values=None):
    """TF 1.x `name_scope(name, default_name, values)`: the scope opens on the graph of
    `values` (made the default graph inside, as TF does) or on the default graph."""
    if default_name is not None and not isinstance(default_name, str):
        raise TypeError(f"`default_name` type ({type(default_name).__name__}) is not a "
                        "string type. You likely meant to pass this into the `values` kwarg.")
    scope_name = default_name if name is None else name
    if scope_name is None and values is not None:
        raise ValueError("At least one of name (None) and default_name (None) must be provided.")
    default = get_default_graph()
    graph = _graph_from_values(values) if values else default
    if graph is default:
        with graph.name_scope(scope_name) as scope:
            yield scope
    else:
        with graph.as_default(), graph.name_scope(scope_name) as scope:
            yield scope


def _graph_from_values(values) -> Graph:
    default = get_default_graph()
    if default.building_function:  # as TF's _get_graph_from_inputs
        return default
    for v in values:
        if isinstance(v, (Tensor, Operation)):
            return v.graph
        if isinstance(v, (list, tuple)):
            for inner in v:
                if isinstance(inner, (Tensor, Operation)):
                    return inner.graph
    return get_default_graph()


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def colocate_with(op, ignore_existing: bool = False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def get_collection(name: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name: str) -> list:
    return get_default_graph().get_collection_ref(name)


# -- conversion of Python values to tensors ---------------------------------------------
def _missing_builder(*args, **kwargs):
    raise RuntimeError("aioflow.ops is not imported: `import aioflow` registers the op "
                       "builders the graph layer needs")


# Builders the graph layer calls but does not own (aioflow.ops registers them on import,
# so that the framework never imports the layer above it).
_builders: dict[str, Callable] = {"constant": _missing_builder, "unstack": _missing_builder}


def register_builder(name: str, fn: Callable) -> None:
    """Give the graph layer the op builder `name` ("constant": Python values become Const
    ops; "unstack": iterating over a tensor)."""
    _builders[name] = fn


_conversion_functions: list[tuple[type, Callable]] = []


def register_tensor_conversion_function(base_type: type, conversion_func: Callable) -> None:
    """Let objects of `base_type` be used where tensors are expected."""
    _conversion_functions.append((base_type, conversion_func))


def convert_to_tensor(value, dtype=None, name: str | None = None,
                      preferred_dtype=None) -> Tensor:
    """A Tensor for `value`: tensors pass through (dtype checked), Python and NumPy values
    become Const ops."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and not dtype.is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}")
        return value
    for base_type, func in _conversion_functions:
        if isinstance(value, base_type):
            # A conversion function may decline with NotImplemented (as in TF).
            if dtype is None and preferred_dtype is not None:
                try:
                    result = func(value, dtype=dtypes.as_dtype(preferred_dtype), name=name)
                except (TypeError, ValueError):
                    result = NotImplemented
                if result is not NotImplemented:
                    return result
            result = func(value, dtype=dtype, name=name)
            if result is not NotImplemented:
                return result
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name={name}, as_ref=False)")
    constant = _builders["constant"]
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def convert_n_to_tensor(values, dtype=None, name=None) -> list[Tensor]:
    return [convert_to_tensor(v, dtype=dtype, name=None if name is None else f"{name}_{i}")
            for i, v in enumerate(values)]


def convert_to_tensor_or_op(value):
    if isinstance(value, Operation):
        return value
    return convert_to_tensor(value)


__all__ = [
    "Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph", "name_scope",
    "control_dependencies", "device", "colocate_with", "convert_to_tensor", "errors",
]
