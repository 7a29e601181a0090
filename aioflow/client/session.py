"""The awaitable Session: `await sess.run(fetches, feed_dict)` on the running event loop.

Before each run the nodes added to the Python graph since the last run are sent to the
DirectSession (incremental extend); feeds are converted to their tensors' dtypes and
checked against static shapes as TF 1.x does; errors from kernels are re-raised with
where the failing op was created.

The event loop is never held by building a step: a run whose signature is new (or that
follows a large extension of the graph) converts, places, optimizes and builds on a
build thread and awaits it; a run of a cached signature stays on the loop (a few dict
lookups). Runs started together wait in the loop's RunGate beyond one budget's worth,
and large fetched values are copied off the loop. A Session may be shared by threads,
each running its own loop: extending and building are locked (see DirectSession).
"""

from __future__ import annotations

import asyncio
import threading
from time import perf_counter

import numpy as np

from aioflow.client.fetch_plan import FetchPlan
from aioflow.framework import dtypes, errors, ops
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.framework.value_repr import summarize
from aioflow.proto import config_pb2, graph_pb2
from aioflow.runtime import session_factory
from aioflow.runtime.build_pool import run_in_build_thread
from aioflow.runtime.direct_session import DirectSession
from aioflow.runtime.run_gate import get_gate

# An extension of at most this many nodes is converted on the loop (about 30 µs a
# node); a larger one, and every build of a new signature, runs on a build thread.
INLINE_EXTEND_NODES = 32
# A fetched read-only array (a constant, a broadcast view) is copied for the caller; one
# larger than this is copied on a worker thread (NumPy releases the GIL to copy).
COPY_OFF_LOOP_BYTES = 1 << 20
_CACHE_LIMIT = 4096


def _as_target(target) -> str:
    """A session target as text (TF accepts bytes too)."""
    return target.decode("utf-8") if isinstance(target, bytes) else (target or "")


class Session:
    """A TF-1-style session whose `run` is a coroutine.

    `Session(target="", graph=None, config=None, *, inline_all=False,
    time_budget_ms=None, warn_overrun=False, compile_segments=True)`: `inline_all` runs
    every kernel on the loop thread (a deterministic debugging mode); `time_budget_ms`
    sets how long this session's runs may hold the loop in one slice (default 2 ms);
    `warn_overrun` warns when an inline stretch of its runs overruns that budget. Both are
    this session's: other sessions on the same loop keep theirs. `compile_segments=False`
    runs every node on its own (no compiled straight-line segments or loops: debugging).
    """

    def __init__(self, target: str = "", graph: ops.Graph | None = None,
                 config: config_pb2.ConfigProto | None = None, *, inline_all: bool = False,
                 time_budget_ms: float | None = None, warn_overrun: bool = False,
                 compile_segments: bool = True):
        self._graph = graph if graph is not None else ops.get_default_graph()
        self._config = config
        self._target = _as_target(target)
        if session_factory.is_local(self._target):
            self._direct = DirectSession(config, inline_all=inline_all,
                                         compile_segments=compile_segments)
        else:  # a cluster's master (aioflow.distributed registers the factory)
            self._direct = session_factory.factory_for(self._target).new_session(
                self._target, config, inline_all=inline_all,
                compile_segments=compile_segments)
        self._version = 0  # the graph version the runtime has (guarded by _extend_lock)
        self._extend_lock = threading.Lock()
        self._library_version = 0  # the version of the graph's library the runtime has
        self._closed = False
        self._time_budget_ms = time_budget_ms
        self._warn_overrun = warn_overrun
        self._plans: dict = {}
        self._feed_specs: dict = {}  # feed_dict key -> _FeedSpec of its tensor
        self._gate_loop = None
        self._gate = None

    @property
    def graph(self) -> ops.Graph:
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    # -- lifetime ---------------------------------------------------------------------
    @staticmethod
    def reset(target: str = "", containers=None, config=None) -> None:
        """TF's `Session.reset(target, containers=None, config=None)`: drop the named
        resource containers (default: the default container, "localhost") in every open
        session of this process, then close those sessions, as TF's DirectSession
        factory does (their later runs raise CancelledError)."""
        target = _as_target(target)
        containers = list(containers) if containers else None
        if session_factory.is_local(target):
            DirectSession.reset_all(containers)
        else:
            session_factory.factory_for(target).reset(target, containers, config)

    def list_devices(self) -> list:
        """The devices of this session: objects with `name`, `device_type`,
        `memory_limit_bytes` and `incarnation` (TF's Session.list_devices)."""
        self._check_open()
        return self._direct.list_devices()

    async def __aenter__(self) -> Session:
        return self

    def __enter__(self):
        """A plain `with` (TF 1.x's habit): say what to write instead."""
        raise TypeError("af.Session is awaitable: write `async with af.Session(...) as sess:` "
                        "and `await sess.run(...)` inside a coroutine, or use af.SyncSession "
                        "(tf.Session in aioflow.compat.v1) for blocking code.")

    def __exit__(self, *exc) -> None:  # never reached: __enter__ raises
        return None

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the session's devices; a later run raises RuntimeError."""
        if not self._closed:
            self._closed = True
            closing = self._direct.close()
            if closing is not None:  # a cluster's master session closes remotely
                await closing

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    # -- extending and building ---------------------------------------------------------
    def _extend_to(self, version: int, blocking: bool = True) -> bool:
        """Send the runtime the ops added up to graph `version`; False (nothing done)
        when not `blocking` and another thread is extending or building."""
        if not self._extend_lock.acquire(blocking):
            return False
        try:
            if version <= self._version:
                return True
            node_defs, checked, types = _node_defs_between(self._graph, self._version,
                                                           version)
            library = self._graph._library
            new_library = library if library.version != self._library_version else None
            if not self._direct.extend_nodes(node_defs, self._graph.graph_def_versions,
                                             blocking, validated=checked,
                                             library=new_library, arg_types=types):
                return False
            self._version = version
            self._library_version = library.version
            return True
        finally:
            self._extend_lock.release()

    def _extend_graph(self) -> None:
        """Send the nodes added since the last run to the runtime (on this thread)."""
        self._extend_to(self._graph.version)

    async def _prepare(self, version: int, key: tuple | None):
        """Extend the runtime to `version`, then the executors of `key` (None: extend
        only). A small extension is done here; a larger one, and a build, on a build
        thread (two runs asking for one build share it)."""
        direct = self._direct
        if version - self._version <= INLINE_EXTEND_NODES and self._extend_to(version, False):
            if key is None:
                return None
            return await direct.get_executors_async(*key)
        result = await run_in_build_thread(self._prepare_on_thread, version, key)
        return None if key is None else await direct.wait_for(result)

    def _prepare_on_thread(self, version: int, key: tuple | None):
        """On a build thread: extend, then build `key` (or the future of its build)."""
        self._extend_to(version)
        return None if key is None else self._direct.build_or_join(key)

    # -- running ----------------------------------------------------------------------
    async def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run the graph and return `fetches`' values in the same structure."""
        self._check_open()
        loop = asyncio.get_running_loop()
        gate = self._gate if loop is self._gate_loop else self._gate_of(loop)
        if gate.spent >= gate.budget or gate.waiters:
            await gate.enqueue()
            self._check_open()
        started = perf_counter()
        feeds = self._convert_feeds(feed_dict) if feed_dict else {}  # first, as TF
        plan = self._plan(fetches)
        names = plan.sorted_fetches
        fed_fetches = bool(feeds) and not feeds.keys().isdisjoint(names)
        if fed_fetches:  # as TF's client: a fed fetch returns its fed value, not run
            names = tuple(name for name in names if name not in feeds)
        version = self._graph.version
        if names or plan.sorted_targets:
            feed_names = tuple(feeds) if len(feeds) < 2 else tuple(sorted(feeds))
            key = (feed_names, names, plan.sorted_targets)
            eak = self._direct.cached_executors(key) if version == self._version else None
            if eak is None:
                eak = await self._prepare(version, key)
                started = perf_counter()
            args = [feeds[name] for name in eak.feeds]
            budget = None if self._time_budget_ms is None else self._time_budget_ms / 1000.0
            try:  # (inline, as in make_callable: one coroutine less a run)
                retvals = await self._direct.run_executors(
                    eak, args, options, run_metadata, time_budget_s=budget,
                    warn_overrun=self._warn_overrun, gate=gate, started=started)
            except errors.OpError as e:
                raise self._with_origin(e) from e.__cause__
        else:  # nothing to run (TF's client does not call the runtime either)
            if version != self._version:
                await self._prepare(version, None)
            retvals = []
        if fed_fetches:
            computed = iter(retvals)
            retvals = [feeds[name] if name in feeds else next(computed)
                       for name in plan.sorted_fetches]
        if plan.single is not None:
            value = retvals[0]
            return _fetched(value) if not _copy_is_large(value) else (
                await _fetched_off_loop([value]))[0]
        return plan.build(await _fetched_values([retvals[i] for i in plan.retval_index]))

    def run_here(self, fetches, feed_dict=None):
        """For SyncSession, on the caller's thread (no event loop running there): the
        run's results when its step is one compiled call, built already and run at
        once (DirectSession.run_whole_here); else NOT_RUN, and the caller runs it on
        the loop as usual. Feeds and fetches are checked as `run` checks them."""
        self._check_open()
        feeds = self._convert_feeds(feed_dict) if feed_dict else {}  # first, as TF
        plan = self._plan(fetches)
        names = plan.sorted_fetches
        if not names or self._graph.version != self._version or (
                feeds and not feeds.keys().isdisjoint(names)):
            return NOT_RUN
        feed_names = tuple(feeds) if len(feeds) < 2 else tuple(sorted(feeds))
        eak = self._direct.cached_executors((feed_names, names, plan.sorted_targets))
        if eak is None or eak.whole is None:
            return NOT_RUN
        retvals = self._direct.run_whole_here(eak, [feeds[name] for name in eak.feeds])
        if retvals is None:
            return NOT_RUN
        if plan.single is not None:
            return _fetched(retvals[0])
        return plan.build([_fetched(retvals[i]) for i in plan.retval_index])

    def _gate_of(self, loop):
        self._gate_loop = loop
        self._gate = gate = get_gate(loop)
        return gate

    def _plan(self, fetches) -> FetchPlan:
        if isinstance(fetches, (ops.Tensor, ops.Operation, str)):
            plan = self._plans.get(fetches)
            if plan is None:
                plan = FetchPlan(self._graph, fetches)
                if len(self._plans) < _CACHE_LIMIT:
                    self._plans[fetches] = plan
            return plan
        return FetchPlan(self._graph, fetches)

    def _convert_feeds(self, feed_dict) -> dict:
        feeds = {}
        specs = self._feed_specs
        graph = self._graph
        for key, value in feed_dict.items():
            spec = specs.get(key) if isinstance(key, (ops.Tensor, str)) else None
            if spec is None and isinstance(key, SparseTensor):  # a value per component, as TF
                parts = zip(key._components(), value, strict=False)  # TF zips them too
                feeds.update(self._convert_feeds(dict(parts)))
                continue
            if spec is None or spec.shape is not spec.tensor.shape:
                spec = _FeedSpec(_feed_tensor(graph, key))
                if isinstance(key, (ops.Tensor, str)) and len(specs) < _CACHE_LIMIT:
                    specs[key] = spec
            tensor = spec.tensor
            if not graph.is_feedable(tensor):
                raise ValueError(f"Tensor {tensor.name} may not be fed.")
            feeds[spec.name] = spec.convert(value)
        return feeds

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """An async callable running `fetches` with positional feed values for `feed_list`;
        the fetch and feed key work is done once, here. As TF's, it builds the step here,
        on the calling thread (errors are raised at once): on a loop serving others,
        make it before serving, or after a first `await sess.run` of the same signature."""
        self._check_open()
        plan = FetchPlan(self._graph, fetches)
        tensors = [_feed_tensor(self._graph, k) for k in (feed_list or [])]
        specs = [_FeedSpec(t) for t in tensors]
        names = [t.name for t in tensors]
        if len(set(names)) != len(names):
            raise ValueError("Duplicate feeds in feed_list are not allowed.")
        self._extend_graph()
        eak = self._direct.get_executors(tuple(sorted(names)), plan.sorted_fetches,
                                         plan.sorted_targets)
        order = [names.index(n) for n in eak.feeds]
        in_order = order == list(range(len(order)))  # feed_list already as eak wants it
        single = plan.single

        async def call(*feed_values, options=None, run_metadata=None):
            if len(feed_values) != len(tensors):
                raise TypeError(f"Expected {len(tensors)} feed values, got {len(feed_values)}")
            self._check_open()
            loop = asyncio.get_running_loop()
            gate = self._gate if loop is self._gate_loop else self._gate_of(loop)
            if gate.spent >= gate.budget or gate.waiters:
                await gate.enqueue()
                self._check_open()
            started = perf_counter()
            values = [spec.convert(v) for spec, v in zip(specs, feed_values, strict=True)]
            budget = None if self._time_budget_ms is None else self._time_budget_ms / 1000.0
            try:  # (self._run, inline: one coroutine less a call)
                retvals = await self._direct.run_executors(
                    eak, values if in_order else [values[i] for i in order], options,
                    run_metadata, time_budget_s=budget, warn_overrun=self._warn_overrun,
                    gate=gate, started=started)
            except errors.OpError as e:
                raise self._with_origin(e) from e.__cause__
            if single is not None:
                value = retvals[0]
                return _fetched(value) if not _copy_is_large(value) else (
                    await _fetched_off_loop([value]))[0]
            return plan.build(await _fetched_values([retvals[i] for i in plan.retval_index]))

        def here(*feed_values):
            """`call` on this thread when its step is one compiled call (as run_here);
            else NOT_RUN."""
            if len(feed_values) != len(tensors) or eak.whole is None:
                return NOT_RUN  # (`call` raises the error)
            self._check_open()
            values = [spec.convert(v) for spec, v in zip(specs, feed_values, strict=True)]
            retvals = self._direct.run_whole_here(
                eak, values if in_order else [values[i] for i in order])
            if retvals is None:
                return NOT_RUN
            if single is not None:
                return _fetched(retvals[0])
            return plan.build([_fetched(retvals[i]) for i in plan.retval_index])

        call.here = here  # (SyncSession's blocking callable tries it first)
        return call

    # -- partial runs ------------------------------------------------------------------
    async def partial_run_setup(self, fetches, feeds=None, targets=None):
        """Set up a partial run (TF's `partial_run_setup`): one step of `fetches` (and
        the ops among them or in `targets`) that stays alive while `partial_run` feeds
        `feeds` and fetches `fetches` a part at a time; returns its handle. Dropping
        the handle (or closing the session) cancels the step."""
        self._check_open()
        plan = FetchPlan(self._graph, fetches)
        feed_names = set()
        for key in feeds or ():
            tensor = _feed_tensor(self._graph, key)
            if not self._graph.is_feedable(tensor):
                raise ValueError(f"Tensor {tensor.name} may not be fed.")
            feed_names.add(tensor.name)
        target_names = set(plan.sorted_targets)
        if targets:
            target_names.update(FetchPlan(self._graph, list(targets)).sorted_targets)
        version = self._graph.version
        if version != self._version:
            await self._prepare(version, None)
        budget = None if self._time_budget_ms is None else self._time_budget_ms / 1000.0
        try:
            return await self._direct.partial_run_setup(
                tuple(sorted(feed_names)), plan.sorted_fetches, tuple(sorted(target_names)),
                budget)
        except errors.OpError as e:
            raise self._with_origin(e) from e.__cause__

    async def partial_run(self, handle, fetches, feed_dict=None):
        """Continue the partial run `handle`: feed `feed_dict`, return `fetches` (TF's
        `partial_run`; each feed and fetch of its setup once, a fetch only when what it
        needs has been fed)."""
        self._check_open()
        plan = self._plan(fetches)
        feeds = self._convert_feeds(feed_dict) if feed_dict else {}
        names = tuple(name for name in plan.sorted_fetches if name not in feeds)
        try:
            values = await self._direct.partial_run(handle, feeds, names)
        except errors.OpError as e:
            raise self._with_origin(e) from e.__cause__
        computed = iter(values)
        retvals = [feeds[name] if name in feeds else next(computed)
                   for name in plan.sorted_fetches]
        if plan.single is not None:
            return _fetched(retvals[0])
        return plan.build(await _fetched_values([retvals[i] for i in plan.retval_index]))

    def _with_origin(self, err: errors.OpError) -> errors.OpError:
        """The same error, its message extended with where the failing op was created."""
        name = err.node_name
        op = self._graph._get_operation_or_none(name) if name else None
        if op is None or op.traceback is None:
            return err
        filename, line, func = op.traceback
        message = (f"{err.message}\n\nOriginal op '{op.name}' ({op.type}) was created at:\n"
                   f"  File \"{filename}\", line {line}, in {func}")
        cls = type(err)  # not cls(...): a user's OpError subclass may take other arguments
        new = cls.__new__(cls)
        errors.OpError.__init__(new, err.node_def, op, message, err.error_code)
        return new


def _node_defs_between(graph: ops.Graph, old: int, new: int):
    """The NodeDefs of the ops with ids in (old, new], as `Operation.node_def` and
    `as_graph_def(from_version=old)` write them, by id: no walk over the whole graph, and
    safe while another thread adds ops (only ops complete when `new` was read are
    taken). Written into one GraphDef (one protobuf arena: about a third faster than a
    NodeDef message per op), except an op left as import_graph_def made it, which gives
    its own. Also: whether every one of them was checked already (Operation._checked),
    so the session need not validate them again; and per NodeDef its (input, output)
    types where the import knows them, else None."""
    by_id = graph._ops_by_id
    graph_def = graph_pb2.GraphDef()
    add = graph_def.node.add
    node_defs = []
    types = []
    append, append_types = node_defs.append, types.append
    checked = True
    for op_id in range(old + 1, new + 1):
        op = by_id.get(op_id)
        if op is None:
            continue
        checked = checked and op._checked
        node_def = op._node_def  # import_graph_def's own, when the op is as imported
        append_types(op._node_types if node_def is not None else None)
        if node_def is None:
            inputs = [t._as_node_def_input() for t in op._inputs]
            controls = op._control_inputs
            if controls:  # TF's ToGraphDef sorts control inputs by name
                inputs.extend(sorted("^" + c.name for c in controls))
            node_def = add(name=op._name, op=op._type, device=op._device, input=inputs,
                           attr=op._attrs)
        append(node_def)
    return node_defs, checked, types


#: Session.run_here's answer when the run must go through the loop.
NOT_RUN = object()


def _fetched(value):
    """What run returns for a value: NumPy scalars for 0-d results, writable arrays."""
    if type(value) is np.ndarray:
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


def _copy_is_large(value) -> bool:
    return (type(value) is np.ndarray and value.nbytes > COPY_OFF_LOOP_BYTES
            and not value.flags.writeable)


async def _fetched_values(values: list) -> list:
    """`_fetched` of each value; a large copy is made on a worker thread, not the loop."""
    for value in values:
        if _copy_is_large(value):
            return await _fetched_off_loop(values)
    return [_fetched(v) for v in values]


async def _fetched_off_loop(values: list) -> list:
    return await asyncio.to_thread(lambda: [_fetched(v) for v in values])


class _FeedSpec:
    """What converting a feed of one tensor needs, looked up once: its name and static
    dims (valid while the tensor keeps its TensorShape object: set_shape replaces it)."""

    __slots__ = ("tensor", "name", "shape", "dims", "scalar_type", "np_dtype", "rows_of")

    def __init__(self, tensor: ops.Tensor):
        self.tensor = tensor
        self.name = tensor.name
        self.shape = shape = tensor.shape
        self.dims = None if shape.rank is None else tuple(shape.as_list())
        dtype = tensor.dtype
        # A Python float fed to a scalar (or unknown) floating tensor: the NumPy scalar
        # type converts it as np.asarray(value, dtype)[()] would, in one call.
        scalar = dtype.is_floating and self.dims in (None, ())
        self.scalar_type = dtype.as_numpy_dtype if scalar else None
        # An array already of the tensor's dtype needs only the shape check (a served
        # request's: its codec made it so); strings and 0-d values take the full path.
        self.np_dtype = None if dtype == dtypes.string else np.dtype(dtype.as_numpy_dtype)
        # [None, d1, ...] with d1... known (a batch of rows): the shape check is one
        # tuple comparison of the rest.
        dims = self.dims
        self.rows_of = dims[1:] if dims and dims[0] is None and None not in dims[1:] \
            else None

    def convert(self, value):
        if type(value) is np.ndarray and value.dtype is self.np_dtype and value.ndim:
            dims = self.dims
            if dims is None or value.shape[1:] == self.rows_of or _dims_match(dims,
                                                                               value.shape):
                return value
        elif type(value) is float and self.scalar_type is not None:
            return self.scalar_type(value)
        return convert_feed_value(self.tensor, value, self.dims)


def _feed_tensor(graph: ops.Graph, key) -> ops.Tensor:
    try:
        element = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (KeyError, ValueError, TypeError) as e:
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0] if e.args else e}"
                        ) from None
    return element


_UNKNOWN = object()


def convert_feed_value(tensor: ops.Tensor, value, dims=_UNKNOWN):
    """`value` as a NumPy value of the tensor's dtype, shape-checked as TF 1.x does;
    `dims`: the tensor's static dims as a tuple (None: unknown rank), when known."""
    if isinstance(value, (ops.Tensor, ops.Operation)):
        raise TypeError("The value of a feed cannot be a af.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        f"TensorHandles. For reference, the tensor object was {value!r} which "
                        f"was passed to the argument `feed_dict` with key {tensor!r}.")
    dtype = tensor.dtype
    if dtype == dtypes.string:
        array = _string_array(tensor, value)
    else:
        np_dtype = dtype.as_numpy_dtype
        if isinstance(value, int) and not isinstance(value, bool):
            converted = np.asarray(value).astype(np_dtype) if dtype.is_integer else None
            if converted is not None and int(converted) != value:
                raise TypeError(f"Type of feed value {summarize(value)} with type {type(value)} "
                                f"is not compatible with Tensor type {np_dtype}. Try explicitly "
                                f"setting the type of the feed tensor to a larger type (e.g. "
                                f"int64).")
        try:
            array = np.asarray(value, dtype=np_dtype)
        except (TypeError, ValueError) as e:  # NumPy's error and text, as TF's client
            raise _conversion_error(tensor, value, e) from None
    if dims is _UNKNOWN:
        shape = tensor.shape
        dims = None if shape.rank is None else tuple(shape.as_list())
    if dims is not None and not _dims_match(dims, array.shape):
        raise ValueError(f"Cannot feed value of shape {tuple(array.shape)!r} for Tensor "
                         f"{tensor.name}, which has shape {tensor.shape}")
    if array.ndim == 0 and array.dtype != object:
        return array[()]  # 0-d values travel as NumPy scalars (cheaper arithmetic)
    return array


def _conversion_error(tensor: ops.Tensor, value, error: Exception) -> Exception:
    """NumPy's error for a value that does not convert to the tensor's dtype, in the words
    TF's client gives (NumPy's for the value as an array), naming the tensor fed."""
    try:
        np.asarray(value).astype(tensor.dtype.as_numpy_dtype)
    except (TypeError, ValueError) as e:
        error = e
    return type(error)(f"{error} (feeding Tensor {tensor.name} of type {tensor.dtype.name})")


def _dims_match(dims: tuple, shape: tuple) -> bool:
    """TensorShape.is_compatible_with for a known rank, without making a TensorShape."""
    if dims == shape:
        return True
    if len(dims) != len(shape):
        return False
    return all(d is None or d == n for d, n in zip(dims, shape, strict=True))


def _string_array(tensor: ops.Tensor, value):
    array = np.asarray(value, dtype=object)
    flat = array.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            flat[i] = v.encode("utf-8")
        elif not isinstance(v, bytes):  # TF's class and text (raised by its runtime)
            raise errors.InternalError(
                None, tensor.op, f"Unsupported object type {type(v).__name__} (feeding "
                                 f"Tensor {tensor.name} of type string)")
    return array
