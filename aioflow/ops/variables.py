"""af.Variable with TF 1.x semantics: a ref variable (VariableV2 + Assign + `read`
Identity) or, with `use_resource=True`, a resource variable (VarHandleOp +
AssignVariableOp + ReadVariableOp), built node for node as tf.compat.v1 builds them; the
variable collections and the initializer ops."""

from __future__ import annotations

from aioflow.framework import dtypes, tensor_shape
from aioflow.framework import ops as ops_mod
from aioflow.ops import state_ops
from aioflow.proto import attr_value_pb2, variable_pb2


class GraphKeys:
    """The standard collection names (TF's tf.compat.v1.GraphKeys)."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    GLOBAL_STEP = "global_step"
    SAVEABLE_OBJECTS = "saveable_objects"
    UPDATE_OPS = "update_ops"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    SUMMARIES = "summaries"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    QUEUE_RUNNERS = "queue_runners"
    VARIABLES = GLOBAL_VARIABLES
    # training (TF's names)
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    TRAIN_OP = "train_op"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    METRIC_VARIABLES = "metric_variables"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    SAVERS = "savers"
    SUMMARY_OP = "summary_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    LOCAL_RESOURCES = "local_resources"
    RESOURCES = "resources"
    EVAL_STEP = "eval_step"
    ACTIVATIONS = "activations"
    WEIGHTS = "weights"
    BIASES = "biases"


def _class_attr(name: str) -> attr_value_pb2.AttrValue:
    value = attr_value_pb2.AttrValue()
    value.list.s.append(f"loc:@{name}".encode())
    return value


def _set_class(graph: ops_mod.Graph, op, true_name: str) -> None:
    """TF's attr scope {"_class": loc:@<variable>}: it does not override the colocation
    stack (ops made inside colocate_with(v) stay colocated with v: an optimizer's slots)."""
    if not graph._colocation_stack:
        op._set_attr("_class", _class_attr(true_name))


def _scope_ops(graph: ops_mod.Graph, since: int) -> list:
    """The ops created in `graph` after op id `since`."""
    return [graph._ops_by_id[i] for i in range(since + 1, graph.version + 1)
            if i in graph._ops_by_id]


def _last_id(graph: ops_mod.Graph) -> int:
    return graph.version


# -- TF's _try_guard_against_uninitialized_dependencies ------------------------------------
def _has_cycle(op, state: dict) -> bool:
    seen = state.get(op.name)
    if seen is not None:
        return seen == "started"
    state[op.name] = "started"
    for dep in [t.op for t in op.inputs] + op.control_inputs:
        if _has_cycle(dep, state):
            return True
    state[op.name] = "finished"
    return False


def _initialized_value_of(variable_op):
    """The initialized_value() of the collected variable whose op is `variable_op`."""
    names = (variable_op.name, variable_op.name + ":0")
    graph = variable_op.graph
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.LOCAL_VARIABLES):
        for var in graph.get_collection(key):
            if getattr(var, "name", None) in names:
                return var.initialized_value()
    return None


def _safe_op(scope: str, op, cache: dict):
    """`op`, or a copy named `<op>_<variable>` reading other variables through their
    initialized values (TF's _safe_initial_value_from_op)."""
    if op.type in ("IsVariableInitialized", "VarIsInitializedOp", "ReadVariableOp", "If"):
        return op
    if op.type in ("Variable", "VariableV2", "VarHandleOp"):
        value = _initialized_value_of(op)
        return op if value is None else value.op
    inputs = [_safe_tensor(scope, t, cache) for t in op.inputs]
    if all(a is b for a, b in zip(inputs, op.inputs, strict=True)):
        return op
    op_type = "Switch" if op.type == "RefSwitch" else op.type
    name = (op.name + "_" + scope).replace(":", "_")
    attrs = {k: op._get_attr_proto(k) for k in op.node_def.attr}
    return op.graph.create_op(op_type, inputs, [t.dtype.base_dtype for t in op.outputs],
                              name=name, attrs=attrs)


def _safe_tensor(scope: str, tensor, cache: dict):
    new_op = cache.get(tensor.op.name)
    if new_op is None:
        new_op = cache[tensor.op.name] = _safe_op(scope, tensor.op, cache)
    return new_op.outputs[tensor.value_index]


def guard_uninitialized_dependencies(scope: str, initial_value):
    """An initial value that reads other variables through their initialized_value()
    (a cond on is_initialized), so initializers may run in any order (TF's
    _try_guard_against_uninitialized_dependencies; `scope` ends in "/")."""
    if _has_cycle(initial_value.op, {}):
        return initial_value
    return _safe_tensor(scope, initial_value, {})


class SaveSliceInfo:
    """Where a part of a partitioned variable sits in the full variable (TF's
    Variable.SaveSliceInfo): the full variable's name and shape, the part's offset and
    shape; `spec` is the checkpoint's slice spec ("10 4 0,4:0,4")."""

    def __init__(self, full_name=None, full_shape=None, var_offset=None, var_shape=None,
                 save_slice_info_def=None, import_scope=None):
        if save_slice_info_def is not None:
            full_name = save_slice_info_def.full_name
            if import_scope:
                full_name = f"{import_scope}/{full_name}"
            full_shape = list(save_slice_info_def.full_shape)
            var_offset = list(save_slice_info_def.var_offset)
            var_shape = list(save_slice_info_def.var_shape)
        self.full_name = full_name
        self.full_shape = list(full_shape) if full_shape is not None else None
        self.var_offset = list(var_offset) if var_offset is not None else None
        self.var_shape = list(var_shape) if var_shape is not None else None

    @property
    def spec(self) -> str:
        full_shape_str = " ".join(f"{d}" for d in self.full_shape) + " "
        sl_spec = ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape,
                                                       strict=True))
        return full_shape_str + sl_spec

    def to_proto(self, export_scope=None):
        full_name = self.full_name
        if export_scope and full_name.startswith(export_scope + "/"):
            full_name = full_name[len(export_scope) + 1:]
        return variable_pb2.SaveSliceInfoDef(full_name=full_name, full_shape=self.full_shape,
                                             var_offset=self.var_offset,
                                             var_shape=self.var_shape)


class Variable:
    """A TF 1.x variable. `Variable(initial_value, trainable=None, collections=None,
    validate_shape=True, name=None, dtype=None, use_resource=None, ...)`: a ref variable
    unless `use_resource`; `initial_value` may be a callable (then its ops go under
    `<name>/Initializer/`, colocated with the variable, as get_variable's)."""

    def __new__(cls, *args, use_resource=None, **kwargs):
        if cls is Variable and use_resource:
            cls = ResourceVariable
        return super().__new__(cls)

    _is_resource = False
    _save_slice_info = None
    _caching_device = None
    _cached_value = None
    SaveSliceInfo = SaveSliceInfo

    def __init__(self, initial_value=None, trainable=None, collections=None,
                 validate_shape: bool = True, caching_device=None, name=None,
                 variable_def=None, dtype=None, expected_shape=None, import_scope=None,
                 constraint=None, use_resource=None, synchronization=None,
                 aggregation=None, shape=None):
        if variable_def is not None:
            raise NotImplementedError("Variable(variable_def=...) arrives with the meta graph "
                                      "import of issue #11")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if trainable is None:
            trainable = True
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = trainable
        self._constraint = constraint
        self._caching_device = caching_device
        graph = ops_mod.get_default_graph()
        self._graph = graph
        init_from_fn = callable(initial_value)
        # TF's init_scope: a variable made in a loop or under control dependencies is
        # initialized outside them (its ops in no control-flow frame).
        with ops_mod.control_dependencies(None), \
                ops_mod.name_scope(name, "Variable", [] if init_from_fn else [initial_value]) \
                as scope:
            self._build(graph, scope, initial_value, init_from_fn, dtype, shape,
                        validate_shape)
        for key in collections:
            graph.add_to_collection(key, self)

    # -- building (ref variables; ResourceVariable overrides) ------------------------------
    def _initial(self, graph, true_name, initial_value, init_from_fn, dtype, since):
        if init_from_fn:
            with graph.name_scope("Initializer"), graph.device(None):
                value = initial_value()
                value = ops_mod.convert_to_tensor(value, name="initial_value", dtype=dtype)
            for op in _scope_ops(graph, since):
                _set_class(graph, op, true_name)
            return value
        return ops_mod.convert_to_tensor(initial_value, name="initial_value", dtype=dtype)

    def _build(self, graph, scope, initial_value, init_from_fn, dtype, shape,
               validate_shape) -> None:
        true_name = scope[:-1]
        since = _last_id(graph)
        self._initial_value = self._initial(graph, true_name, initial_value, init_from_fn,
                                            dtype, since)
        value_shape = (tensor_shape.as_shape(shape) if shape is not None
                       else self._initial_value.shape)
        if not validate_shape:
            value_shape = tensor_shape.unknown_shape()
        self._variable = state_ops.variable_op_v2(
            value_shape, self._initial_value.dtype.base_dtype, name=scope)
        if init_from_fn:
            _set_class(graph, self._variable.op, true_name)
        with graph.colocate_with(self._variable.op):
            self._initializer_op = state_ops.assign(
                self._variable, guard_uninitialized_dependencies(scope, self._initial_value),
                validate_shape=validate_shape).op
        from aioflow.ops.array_ops import identity

        if self._caching_device is not None:
            with graph.device(self._caching_device):
                self._snapshot = identity(self._variable, name="read")
        else:
            with graph.device(self._variable.op.device), \
                    graph.colocate_with(self._variable.op):
                self._snapshot = identity(self._variable, name="read")

    # -- TF's Variable API ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self) -> ops_mod.Operation:
        return self._variable.op

    @property
    def graph(self) -> ops_mod.Graph:
        return self._graph

    @property
    def device(self) -> str:
        return self._variable.device if hasattr(self._variable, "device") else ""

    @property
    def dtype(self) -> dtypes.DType:
        return self._variable.dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._variable.shape

    def get_shape(self) -> tensor_shape.TensorShape:
        return self.shape

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    @property
    def initializer(self) -> ops_mod.Operation:
        return self._initializer_op

    @property
    def initial_value(self) -> ops_mod.Tensor:
        return self._initial_value

    def value(self) -> ops_mod.Tensor:
        """The variable's value as a tensor (the `read` snapshot)."""
        return self._snapshot

    def read_value(self) -> ops_mod.Tensor:
        """A fresh read of the variable (an Identity named `read`)."""
        from aioflow.ops.array_ops import identity

        return identity(self._variable, name="read")

    def _ref(self) -> ops_mod.Tensor:
        return self._variable

    def _set_save_slice_info(self, save_slice_info: SaveSliceInfo) -> None:
        self._save_slice_info = save_slice_info

    def _get_save_slice_info(self) -> SaveSliceInfo | None:
        return self._save_slice_info

    def _as_graph_element(self):
        return self._variable

    def eval(self, session=None):
        """TF 1.x's `v.eval()`: the value, in `session` or the default (blocking) session."""
        return self._as_graph_element().eval(session=session)

    def assign(self, value, use_locking=False, name=None, read_value=True):
        assign = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return assign if read_value else assign.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        assign = state_ops.assign_add(self._variable, delta, use_locking=use_locking,
                                      name=name)
        return assign if read_value else assign.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        assign = state_ops.assign_sub(self._variable, delta, use_locking=use_locking,
                                      name=name)
        return assign if read_value else assign.op

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return state_ops.scatter_update(self, sparse_delta.indices, sparse_delta.values,
                                        use_locking=use_locking, name=name)

    def count_up_to(self, limit: int):
        return state_ops.count_up_to(self._variable, limit)

    def is_initialized(self, name=None) -> ops_mod.Tensor:
        return state_ops.is_variable_initialized(self, name=name)

    def initialized_value(self) -> ops_mod.Tensor:
        """The value, initialized first when it is not (TF's cond on is_initialized)."""
        from aioflow.ops.control_flow_ops import cond

        return cond(self.is_initialized(), self.read_value,
                    lambda: self.initial_value)

    def __repr__(self) -> str:
        return (f"<af.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.base_dtype.name}>")


class ResourceVariable(Variable):
    """A resource variable as tf.compat.v1 builds one in a graph (use_resource=True)."""

    _is_resource = True

    def _build(self, graph, scope, initial_value, init_from_fn, dtype, shape,
               validate_shape) -> None:
        true_name = scope[:-1]
        since = _last_id(graph)
        with graph.name_scope("Initializer"), graph.device(None):
            value = initial_value() if init_from_fn else initial_value
            value = ops_mod.convert_to_tensor(value, name="initial_value", dtype=dtype)
        for op in _scope_ops(graph, since):
            _set_class(graph, op, true_name)
        self._initial_value = value
        var_shape = (tensor_shape.as_shape(shape) if shape is not None else value.shape)
        if not validate_shape:
            var_shape = tensor_shape.unknown_shape()
        self._dtype = value.dtype.base_dtype
        self._shape = var_shape
        self._handle = state_ops.var_handle_op(self._dtype, var_shape, shared_name=true_name,
                                               debug_name=scope, name=scope)
        _set_class(graph, self._handle.op, true_name)
        self._variable = self._handle
        with graph.name_scope("IsInitialized"):
            self._is_initialized_op = state_ops.var_is_initialized_op(self._handle)
        with graph.name_scope("Assign") as n, graph.colocate_with(None, True):
            self._initializer_op = state_ops.assign_variable_op(
                self._handle, guard_uninitialized_dependencies(scope, value), name=n)
        with graph.name_scope("Read"):
            self._graph_element = self._read("ReadVariableOp")
            self._cached_value = None
            if self._caching_device is not None:
                from aioflow.ops.array_ops import identity

                with graph.colocate_with(None, True), graph.device(self._caching_device):
                    self._cached_value = identity(self._graph_element)

    def _read(self, name: str = "ReadVariableOp") -> ops_mod.Tensor:
        value = state_ops.read_variable_op(self._handle, self._dtype, name=name)
        value.set_shape(self._shape)
        return value

    @property
    def handle(self) -> ops_mod.Tensor:
        return self._handle

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def value(self) -> ops_mod.Tensor:
        """A read of the variable in the current name scope, outside any colocation (TF's
        value(): colocate_with(None, ignore_existing=True))."""
        if self._cached_value is not None:
            return self._cached_value
        with ops_mod.colocate_with(None, ignore_existing=True):
            return self._read()

    def read_value(self) -> ops_mod.Tensor:
        """A read under "Read", then an Identity (placed where the reader is, as TF's)."""
        from aioflow.ops.array_ops import identity

        with ops_mod.name_scope("Read"):
            value = self._read()
        return identity(value)

    def _ref(self):
        return self

    def _as_graph_element(self):
        return self._graph_element

    def _as_control_input(self) -> ops_mod.Operation:
        """A control dependency on a resource variable is on its op (TF's
        control_dependencies: no read; an assign's result waits for the assign)."""
        return self.op

    def _lazy_read(self, op) -> _UnreadVariable:
        return _UnreadVariable(self, op)

    def assign(self, value, use_locking=None, name=None, read_value=True):
        value = ops_mod.convert_to_tensor(value, dtype=self._dtype)
        op = state_ops.assign_variable_op(self._handle, value, name=name)
        return self._lazy_read(op) if read_value else op

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        from aioflow.framework.op_def_library import apply_op

        op = apply_op("AssignAddVariableOp", name=name, resource=self._handle,
                      value=ops_mod.convert_to_tensor(delta, dtype=self._dtype))
        return self._lazy_read(op) if read_value else op

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        from aioflow.framework.op_def_library import apply_op

        op = apply_op("AssignSubVariableOp", name=name, resource=self._handle,
                      value=ops_mod.convert_to_tensor(delta, dtype=self._dtype))
        return self._lazy_read(op) if read_value else op

    def count_up_to(self, limit: int):
        """The value before an increment (ResourceCountUpTo); OutOfRangeError at `limit`."""
        from aioflow.framework.op_def_library import apply_op

        return apply_op("ResourceCountUpTo", resource=self._handle, limit=limit,
                        T=self._dtype)

    def is_initialized(self, name=None) -> ops_mod.Tensor:
        return state_ops.var_is_initialized_op(self._handle, name=name)

    def sparse_read(self, indices, name=None) -> ops_mod.Tensor:
        with ops_mod.name_scope("Gather" if name is None else name) as scope:
            return state_ops.resource_gather(self._handle, indices, self._dtype, name=scope)


class _UnreadVariable(ResourceVariable):
    """What a resource variable's assign* returns (TF's _UnreadVariable): its `op` is the
    assign op, so grouping it waits for the assignment; fetched, it is a read made after
    the assignment; used as a tensor, a fresh read that also waits for it."""

    def __init__(self, parent: ResourceVariable, parent_op):  # noqa: D107 (no _build)
        self._handle = self._variable = parent._handle
        self._dtype, self._shape = parent._dtype, parent._shape
        self._graph = parent._graph
        self._trainable = parent._trainable
        self._constraint = parent._constraint
        self._caching_device = None
        self._cached_value = None
        self._parent = parent
        self._parent_op = parent_op
        with ops_mod.control_dependencies([parent_op]):
            self._graph_element = self._read()

    @property
    def name(self) -> str:
        return self._handle.name

    @property
    def op(self) -> ops_mod.Operation:
        return self._parent_op

    @property
    def initializer(self):
        return self._parent.initializer

    @property
    def initial_value(self):
        return self._parent.initial_value

    def _read(self, name: str = "ReadVariableOp") -> ops_mod.Tensor:
        with ops_mod.control_dependencies([self._parent_op]):
            return super()._read(name)


def _to_tensor(value, dtype=None, name=None):
    """Variables convert to their value (a ref variable's snapshot, a resource read)."""
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type "
                         f"'{value.dtype.base_dtype.name}'")
    return value.value()


def _delegate(op_name: str):
    def method(self, *args):
        return getattr(self.value(), op_name)(*args)

    method.__name__ = op_name
    return method


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
            "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
            "__rmod__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__", "__ror__",
            "__xor__", "__rxor__", "__matmul__", "__rmatmul__", "__neg__", "__abs__",
            "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__"):
    setattr(Variable, _op, _delegate(_op))
Variable.__array_priority__ = 100
ops_mod.register_tensor_conversion_function(Variable, _to_tensor)


# -- collections and initializers ----------------------------------------------------------
def global_variables(scope: str | None = None) -> list:
    return ops_mod.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list:
    return ops_mod.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list:
    return ops_mod.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list:
    return ops_mod.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def variables_initializer(var_list, name: str = "init") -> ops_mod.Operation:
    """One op running every variable's initializer (a NoOp when there is none)."""
    from aioflow.ops.array_ops import group, no_op

    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> ops_mod.Operation:
    return variables_initializer(global_variables())


def local_variables_initializer() -> ops_mod.Operation:
    return variables_initializer(local_variables(), name="init")


def is_variable_initialized(variable) -> ops_mod.Tensor:
    return state_ops.is_variable_initialized(variable)


def report_uninitialized_variables(var_list=None,
                                   name: str = "report_uninitialized_variables"):
    """The names (1-D strings) of the variables of `var_list` (default: global and local)
    not initialized yet, as TF's."""
    from aioflow.ops.array_ops import boolean_mask, stack
    from aioflow.ops.constant_op import constant
    from aioflow.ops.math_ops import logical_not

    if var_list is None:
        var_list = global_variables() + local_variables()
    with ops_mod.name_scope(name), ops_mod.device("/cpu:0"):
        if not var_list:
            return constant([], dtype=dtypes.string)
        mask = logical_not(stack([state_ops.is_variable_initialized(v) for v in var_list]))
        names = constant([v.op.name for v in var_list])
        return boolean_mask(names, mask)


def assert_variables_initialized(var_list=None):
    raise NotImplementedError("assert_variables_initialized is not supported by aioflow; "
                              "use report_uninitialized_variables")
