"""The awaitable Session: `await sess.run(fetches, feed_dict)` on the running event loop.

Before each run the nodes added to the Python graph since the last run are sent to the
DirectSession (incremental extend); feeds are converted to their tensors' dtypes and
checked against static shapes as TF 1.x does; errors from kernels are re-raised with
where the failing op was created.
"""

from __future__ import annotations

import numpy as np

from aioflow.client.fetch_plan import FetchPlan
from aioflow.framework import dtypes, errors, ops
from aioflow.proto import config_pb2
from aioflow.runtime.direct_session import DirectSession


class Session:
    """A TF-1-style session whose `run` is a coroutine.

    `Session(target="", graph=None, config=None, *, inline_all=False,
    time_budget_ms=None, warn_overrun=False)`: `inline_all` runs every kernel on the loop
    thread (a deterministic debugging mode); `time_budget_ms` sets how long this session's
    runs may hold the loop in one slice (default 2 ms); `warn_overrun` warns when an inline
    stretch of its runs overruns that budget. Both are this session's: other sessions on
    the same loop keep theirs.
    """

    def __init__(self, target: str = "", graph: ops.Graph | None = None,
                 config: config_pb2.ConfigProto | None = None, *, inline_all: bool = False,
                 time_budget_ms: float | None = None, warn_overrun: bool = False):
        if target:
            raise errors.UnimplementedError(None, None, f"Remote targets are not supported: "
                                                        f"{target!r}")
        self._graph = graph if graph is not None else ops.get_default_graph()
        self._config = config
        self._direct = DirectSession(config, inline_all=inline_all)
        self._version = 0
        self._closed = False
        self._time_budget_ms = time_budget_ms
        self._warn_overrun = warn_overrun
        self._plans: dict = {}

    @property
    def graph(self) -> ops.Graph:
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return ""

    # -- lifetime ---------------------------------------------------------------------
    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the session's devices; a later run raises RuntimeError."""
        if not self._closed:
            self._closed = True
            self._direct.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")

    def _extend_graph(self) -> None:
        """Send the nodes added since the last run to the runtime."""
        version = self._graph.version
        if version > self._version:
            self._direct.extend(self._graph.as_graph_def(from_version=self._version))
            self._version = version

    # -- running ----------------------------------------------------------------------
    async def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run the graph and return `fetches`' values in the same structure."""
        self._check_open()
        plan = self._plan(fetches)
        feeds = self._convert_feeds(feed_dict) if feed_dict else {}
        self._extend_graph()
        names = plan.sorted_fetches
        fed_fetches = bool(feeds) and not feeds.keys().isdisjoint(names)
        if fed_fetches:  # as TF's client: a fed fetch returns its fed value, not run
            names = tuple(name for name in names if name not in feeds)
        if names or plan.sorted_targets:
            eak = self._direct.get_executors(tuple(sorted(feeds)), names,
                                             plan.sorted_targets)
            args = [feeds[name] for name in eak.feeds]
            retvals = await self._run(eak, args, options, run_metadata)
        else:  # nothing to run (TF's client does not call the runtime either)
            retvals = []
        if fed_fetches:
            computed = iter(retvals)
            retvals = [feeds[name] if name in feeds else next(computed)
                       for name in plan.sorted_fetches]
        if plan.single is not None:
            return _fetched(retvals[0])
        return plan.build([_fetched(retvals[i]) for i in plan.retval_index])

    async def _run(self, eak, args, options, run_metadata):
        budget = None if self._time_budget_ms is None else self._time_budget_ms / 1000.0
        try:
            return await self._direct.run_executors(eak, args, options, run_metadata,
                                                    time_budget_s=budget,
                                                    warn_overrun=self._warn_overrun)
        except errors.OpError as e:
            raise self._with_origin(e) from e.__cause__

    def _plan(self, fetches) -> FetchPlan:
        if isinstance(fetches, (ops.Tensor, ops.Operation, str)):
            plan = self._plans.get(fetches)
            if plan is None:
                plan = FetchPlan(self._graph, fetches)
                if len(self._plans) < 4096:
                    self._plans[fetches] = plan
            return plan
        return FetchPlan(self._graph, fetches)

    def _convert_feeds(self, feed_dict) -> dict:
        feeds = {}
        for key, value in feed_dict.items():
            tensor = _feed_tensor(self._graph, key)
            if not self._graph.is_feedable(tensor):
                raise ValueError(f"Tensor {tensor.name} may not be fed.")
            feeds[tensor.name] = convert_feed_value(tensor, value)
        return feeds

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """An async callable running `fetches` with positional feed values for `feed_list`;
        the fetch and feed key work is done once, here."""
        self._check_open()
        plan = FetchPlan(self._graph, fetches)
        tensors = [_feed_tensor(self._graph, k) for k in (feed_list or [])]
        names = [t.name for t in tensors]
        if len(set(names)) != len(names):
            raise ValueError("Duplicate feeds in feed_list are not allowed.")
        self._extend_graph()
        eak = self._direct.get_executors(tuple(sorted(names)), plan.sorted_fetches,
                                         plan.sorted_targets)
        order = [names.index(n) for n in eak.feeds]
        single = plan.single

        async def call(*feed_values, options=None, run_metadata=None):
            if len(feed_values) != len(tensors):
                raise TypeError(f"Expected {len(tensors)} feed values, got {len(feed_values)}")
            self._check_open()
            values = [convert_feed_value(t, v) for t, v in zip(tensors, feed_values, strict=True)]
            retvals = await self._run(eak, [values[i] for i in order], options, run_metadata)
            if single is not None:
                return _fetched(retvals[0])
            return plan.build([_fetched(retvals[i]) for i in plan.retval_index])

        return call

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


def _fetched(value):
    """What run returns for a value: NumPy scalars for 0-d results, writable arrays."""
    if type(value) is np.ndarray:
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


def _feed_tensor(graph: ops.Graph, key) -> ops.Tensor:
    try:
        element = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (KeyError, ValueError, TypeError) as e:
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e.args[0] if e.args else e}"
                        ) from None
    return element


def convert_feed_value(tensor: ops.Tensor, value):
    """`value` as a NumPy value of the tensor's dtype, shape-checked as TF 1.x does."""
    if isinstance(value, (ops.Tensor, ops.Operation)):
        raise TypeError("The value of a feed cannot be a af.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        "TensorHandles.")
    dtype = tensor.dtype
    if dtype == dtypes.string:
        array = _string_array(value)
    else:
        np_dtype = dtype.as_numpy_dtype
        if isinstance(value, int) and not isinstance(value, bool):
            converted = np.asarray(value).astype(np_dtype) if dtype.is_integer else None
            if converted is not None and int(converted) != value:
                raise TypeError(f"Type of feed value {value} with type {type(value)} is not "
                                f"compatible with Tensor type {dtype!r}. Try explicitly setting "
                                f"the type of the feed tensor to a larger type (e.g. int64).")
        try:
            array = np.asarray(value, dtype=np_dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Cannot feed value {value!r} for Tensor {tensor.name} of type "
                            f"{dtype.name}: {e}") from None
    shape = tensor.shape
    if shape.rank is not None and not shape.is_compatible_with(array.shape):
        raise errors.InvalidArgumentError(
            None, tensor.op, f"Cannot feed value of shape {tuple(array.shape)!r} for Tensor "
                             f"{tensor.name!r}, which has shape {str(shape)!r}")
    if array.ndim == 0 and array.dtype != object:
        return array[()]  # 0-d values travel as NumPy scalars (cheaper arithmetic)
    return array


def _string_array(value):
    array = np.asarray(value, dtype=object)
    flat = array.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            flat[i] = v.encode("utf-8")
        elif not isinstance(v, bytes):
            raise TypeError(f"Cannot feed {v!r} to a string tensor")
    return array
