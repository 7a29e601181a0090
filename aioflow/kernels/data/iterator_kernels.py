"""Iterators as resources and the ops on them (tensorflow/core/kernels/data/
iterator_ops.cc, optional_ops.cc): IteratorV2, AnonymousIteratorV2/V3, OneShotIterator,
MakeIterator, IteratorGetNext (an async kernel awaited on the loop), IteratorGetNextSync,
IteratorGetNextAsOptional and the Optional ops, IteratorToStringHandle,
IteratorFromStringHandle(V2), DeleteIterator, SerializeIterator, DeserializeIterator.

An IteratorResource serialises its consumers: a get_next that has to wait runs as a
task of the resource, shielded from the consumer's cancellation. A consumer cancelled
mid-wait (its run cancelled, a deadline) leaves the fetch running; its element goes to
the next consumer, so nothing is lost or duplicated, and two runs pulling from one
iterator get distinct elements in order. A get_next that does not suspend (most
pipelines, whose elements are computed inline) costs no task at all."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np

from aioflow.framework import dtypes, errors, tensor_util
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.var import ResourceHandle, handle_value
from aioflow.proto import resource_handle_pb2, tensor_pb2

from .dataset import (
    PENDING,
    CapturedFunction,
    Dataset,
    IteratorContext,
    dataset_of,
    drive,
    is_pending,
    shapes_attr,
    types_attr,
)

ITERATOR_TYPE = "IteratorResource"
_unique = itertools.count(1)
_TASKS: set = set()


class IteratorResource:
    """An iterator's resource: its signature, and the iterator of the dataset it was
    last initialized with (None before MakeIterator)."""

    def __init__(self, output_types, output_shapes, resource_mgr, name: str = ""):
        self.output_types = list(output_types)
        self.output_shapes = list(output_shapes)
        self.resource_mgr = resource_mgr
        self.name = name
        self.dataset: Dataset | None = None
        self.iterator = None
        self.pending: asyncio.Task | None = None

    def set_dataset(self, dataset: Dataset) -> None:
        """MakeIterator: a fresh iterator over `dataset` (the old one is dropped)."""
        if self.output_types and dataset.dtypes != self.output_types:
            def names(ts):
                return "[" + ", ".join(t.name for t in ts) + "]"
            raise errors.InvalidArgumentError(
                None, None, f"Number of components does not match: expected "
                            f"{len(self.output_types)} types but got "
                            f"{len(dataset.dtypes)}." if len(dataset.dtypes) != len(
                                self.output_types) else
                            f"Data type mismatch: expected {names(self.output_types)} but "
                            f"got {names(dataset.dtypes)}.")
        self.close()
        self.dataset = dataset
        self.iterator = dataset.make_iterator(
            IteratorContext(self.resource_mgr), "Iterator")

    def close(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        if self.iterator is not None:
            self.iterator.close()

    def _check(self):
        if self.iterator is None:
            raise errors.FailedPreconditionError(
                None, None, "GetNext() failed because the iterator has not been "
                            "initialized. Ensure that you have run the initializer "
                            "operation for this iterator before getting the next element.")

    def try_next(self):
        """The next element (None at the end) if it is ready without waiting, else
        is_pending(): then await `get_next()`."""
        self._check()
        if self.pending is not None:
            return PENDING
        value, rest = drive(self.iterator.get_next())
        if rest is None:
            return value
        self.pending = asyncio.get_running_loop().create_task(_finish(rest))
        return value

    async def get_next(self):
        """The next element, or None at the end (the slow path: waits on the loop)."""
        while True:
            self._check()
            task = self.pending
            if task is None:
                value, rest = drive(self.iterator.get_next())
                if rest is None:
                    return value
                task = self.pending = asyncio.get_running_loop().create_task(_finish(rest))
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise            # our consumer was cancelled: the fetch goes on
            except Exception:  # noqa: BLE001 - whoever claims the task raises it
                pass
            if self.pending is task:  # unclaimed: ours
                self.pending = None
                return task.result()
            # another consumer claimed it first: fetch again

    async def save(self) -> dict:
        """The iterator's state, once its background work is between elements."""
        self._check()
        await self.iterator.quiesce()
        if self.pending is not None:
            raise errors.FailedPreconditionError(
                None, None, "Cannot save an iterator while a GetNext() is in progress")
        state: dict = {}
        self.iterator.save(state)
        return state

    async def restore(self, state: dict) -> None:
        self._check()
        self.close()
        self.iterator = self.dataset.make_iterator(
            IteratorContext(self.resource_mgr), "Iterator")
        await self.iterator.restore(state)


async def _finish(awaitable):
    return await awaitable


def _end_of_sequence():
    return errors.OutOfRangeError(None, None, "End of sequence")


def resource_of(ctx, value) -> IteratorResource:
    handle = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(handle, ResourceHandle):
        raise errors.InvalidArgumentError(None, None, "Expected an iterator resource handle")
    return ctx.resource_mgr.lookup(handle.container, ITERATOR_TYPE, handle.name)


def _handle(ctx, container: str, name: str, device: str) -> np.ndarray:
    container = container or ctx.resource_mgr.default_container
    value = handle_value(ResourceHandle(device, container, name, ITERATOR_TYPE))
    value.flags.writeable = False
    return value


class _IteratorHandleOp(OpKernel):
    """IteratorV2 and TF 1's Iterator: the resource (created once per session)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.types = types_attr(ctx)
        self.shapes = shapes_attr(ctx)
        self.container = _str(ctx.get_attr("container", ""))
        self.shared_name = _str(ctx.get_attr("shared_name", ""))
        self.device = ctx.node_def.device
        self._cached = (None, None)

    def compute(self, ctx, inputs):
        mgr, value = self._cached
        if mgr is ctx.resource_mgr:
            return (value,)
        name = self.shared_name or f"_{next(_unique)}_{self.name}"
        ctx.resource_mgr.lookup_or_create(
            self.container, ITERATOR_TYPE, name,
            lambda: IteratorResource(self.types, self.shapes, ctx.resource_mgr, name))
        value = _handle(ctx, self.container, name, self.device)
        self._cached = (ctx.resource_mgr, value)
        return (value,)


def _str(value) -> str:
    """A string attr (container, shared_name): TF takes any bytes; non-UTF-8 ones are
    kept, escaped, rather than failing the kernel."""
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else value


register_kernel("IteratorV2", "CPU")(_IteratorHandleOp)
register_kernel("Iterator", "CPU")(_IteratorHandleOp)


def _deleter() -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = b"IteratorDeleter"
    return out


@register_kernel("AnonymousIteratorV3", "CPU")
@register_kernel("AnonymousIteratorV2", "CPU")
@register_kernel("AnonymousIterator", "CPU")
class AnonymousIteratorOp(OpKernel):
    """A new iterator resource each run (V2: and a deleter)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.types = types_attr(ctx)
        self.shapes = shapes_attr(ctx)
        self.device = ctx.node_def.device
        self.with_deleter = ctx.op_type == "AnonymousIteratorV2"

    def compute(self, ctx, inputs):
        name = f"_AnonymousIterator{next(_unique)}"
        ctx.resource_mgr.create("", ITERATOR_TYPE, name,
                                IteratorResource(self.types, self.shapes, ctx.resource_mgr,
                                                 name))
        value = _handle(ctx, "", name, self.device)
        return (value, _deleter()) if self.with_deleter else (value,)


@register_kernel("DeleteIterator", "CPU")
class DeleteIteratorOp(OpKernel):
    def compute(self, ctx, inputs):
        handle = inputs[0][()]
        resource = ctx.resource_mgr.lookup(handle.container, ITERATOR_TYPE, handle.name)
        resource.close()
        ctx.resource_mgr.delete(handle.container, ITERATOR_TYPE, handle.name)
        return ()


@register_kernel("MakeIterator", "CPU")
class MakeIteratorOp(OpKernel):
    """(Re)initialize the iterator with the dataset."""

    def compute(self, ctx, inputs):
        resource_of(ctx, inputs[1]).set_dataset(dataset_of(inputs[0]))
        return ()


@register_kernel("OneShotIterator", "CPU")
class OneShotIteratorOp(AsyncOpKernel):
    """The resource, initialized once per session with the dataset `dataset_factory`
    returns (the factory runs on its first run)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.types = types_attr(ctx)
        self.shapes = shapes_attr(ctx)
        self.container = _str(ctx.get_attr("container", ""))
        self.shared_name = _str(ctx.get_attr("shared_name", ""))
        self.device = ctx.node_def.device
        self.factory = CapturedFunction.from_attr(ctx, "dataset_factory", [])
        self._cached = (None, None)
        self._lock = asyncio.Lock()

    async def compute_async(self, ctx, inputs):
        async with self._lock:
            mgr, value = self._cached
            if mgr is ctx.resource_mgr:
                return (value,)
            name = self.shared_name or f"_{next(_unique)}_{self.name}"
            created = []

            def make():
                created.append(True)
                return IteratorResource(self.types, self.shapes, ctx.resource_mgr, name)

            resource = ctx.resource_mgr.lookup_or_create(self.container, ITERATOR_TYPE,
                                                         name, make)
            if created:
                result = await self.factory.flr.run(self.factory.body, ctx, [])
                resource.set_dataset(dataset_of(result[0]))
            value = _handle(ctx, self.container, name, self.device)
            self._cached = (ctx.resource_mgr, value)
            return (value,)


class _GetNextBase(AsyncOpKernel):
    """Shared: take the next element without a task when it is ready at once."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.types = types_attr(ctx)

    def outputs(self, element):
        raise NotImplementedError

    def start_async(self, ctx, inputs, done):
        resource = resource_of(ctx, inputs[0])
        value = resource.try_next()
        if is_pending(value):
            loop = asyncio.get_running_loop()
            task = loop.create_task(self._wait(resource, done))
            _TASKS.add(task)
            task.add_done_callback(_TASKS.discard)
            token = ctx.cancellation.register_callback(
                lambda: loop.call_soon_threadsafe(task.cancel))
            if token is None:
                task.cancel()
            else:
                task.add_done_callback(lambda _: ctx.cancellation.deregister_callback(token))
            return None
        return self.outputs(value)

    async def _wait(self, resource, done):
        try:
            element = await resource.get_next()
            outs = self.outputs(element)
        except asyncio.CancelledError:
            done(None, errors.CancelledError(None, None, "GetNext was cancelled"))
            return
        except BaseException as e:  # noqa: BLE001 - the node's error
            done(None, e)
            return
        done(outs, None)

    async def compute_async(self, ctx, inputs):
        return self.outputs(await resource_of(ctx, inputs[0]).get_next())


@register_kernel("IteratorGetNext", "CPU")
class IteratorGetNextOp(_GetNextBase):
    """The next element; OutOfRangeError at the end."""

    def outputs(self, element):
        if element is None:
            raise _end_of_sequence()
        return element


@register_kernel("IteratorGetNextSync", "CPU")
class IteratorGetNextSyncOp(IteratorGetNextOp):
    """As IteratorGetNext (TF runs it on the calling thread; here, the loop)."""


class OptionalValue:
    """What an Optional variant holds: the components, or None (no value)."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def __repr__(self) -> str:
        return "<Optional>" if self.values is None else f"<Optional {len(self.values)}>"

    def zeros_like(self) -> OptionalValue:
        """ZerosLike of an Optional (TF's OptionalZerosLike): none stays none, else an
        Optional of its components' zeros (cond_v2's gradients take it)."""
        if self.values is None:
            return self
        return OptionalValue([_zeros_like_value(np.asarray(v)) for v in self.values])


def _zeros_like_value(value: np.ndarray) -> np.ndarray:
    if value.dtype != object:
        return np.zeros(value.shape, value.dtype)
    out = np.empty(value.shape, dtype=object)
    for i, v in enumerate(value.flat):
        out.flat[i] = v.zeros_like() if hasattr(v, "zeros_like") else b""
    return out


def optional_value(values) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = OptionalValue(values)
    return out


@register_kernel("IteratorGetNextAsOptional", "CPU")
class IteratorGetNextAsOptionalOp(_GetNextBase):
    """The next element as an Optional: empty at the end (no error)."""

    def outputs(self, element):
        return (optional_value(element),)


def _optional_of(value) -> OptionalValue:
    item = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(item, OptionalValue):
        raise errors.InvalidArgumentError(
            None, None, "Input tensor must be a scalar DT_VARIANT tensor of Optional")
    return item


@register_kernel("OptionalHasValue", "CPU")
class OptionalHasValueOp(OpKernel):
    def compute(self, ctx, inputs):
        return (np.array(_optional_of(inputs[0]).values is not None),)


@register_kernel("OptionalGetValue", "CPU")
class OptionalGetValueOp(OpKernel):
    def compute(self, ctx, inputs):
        values = _optional_of(inputs[0]).values
        if values is None:
            raise errors.InvalidArgumentError(
                None, None, "The given optional does not have a value.")
        return tuple(values)


@register_kernel("OptionalNone", "CPU")
class OptionalNoneOp(OpKernel):
    def compute(self, ctx, inputs):
        return (optional_value(None),)


@register_kernel("OptionalFromValue", "CPU")
class OptionalFromValueOp(OpKernel):
    def compute(self, ctx, inputs):
        return (optional_value(list(inputs)),)


# -- string handles -------------------------------------------------------------------------

@register_kernel("IteratorToStringHandle", "CPU")
class IteratorToStringHandleOp(OpKernel):
    """The handle as a serialized ResourceHandleProto (a string a feed can carry)."""

    def compute(self, ctx, inputs):
        handle = inputs[0][()]
        proto = resource_handle_pb2.ResourceHandleProto(
            device=handle.device, container=handle.container, name=handle.name,
            maybe_type_name=handle.maybe_type_name)
        return (np.array(proto.SerializeToString(), dtype=object),)


@register_kernel("IteratorFromStringHandleV2", "CPU")
@register_kernel("IteratorFromStringHandle", "CPU")
class IteratorFromStringHandleOp(OpKernel):
    """The iterator a string handle names; its types must be the op's."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.types = types_attr(ctx)

    def compute(self, ctx, inputs):
        raw = np.asarray(inputs[0], dtype=object)
        if raw.ndim != 0:
            raise errors.InvalidArgumentError(
                None, None, f"string_handle must be a scalar, but got shape "
                            f"{list(raw.shape)}")
        proto = resource_handle_pb2.ResourceHandleProto()
        try:
            proto.ParseFromString(bytes(raw[()]))
        except Exception as e:  # noqa: BLE001 - any parse failure
            raise errors.InvalidArgumentError(
                None, None, "Could not parse string_handle as a valid ResourceHandle") from e
        resource = ctx.resource_mgr.lookup(proto.container, ITERATOR_TYPE, proto.name)
        if self.types and resource.output_types != self.types:
            raise errors.InvalidArgumentError(
                None, None, f"Expected types {_types(self.types)} but got "
                            f"{_types(resource.output_types)}")
        return (handle_value(ResourceHandle(proto.device, proto.container, proto.name,
                                            ITERATOR_TYPE)),)


def _types(ts) -> str:
    return "[" + ", ".join(dtypes.as_dtype(t).name for t in ts) + "]"


# -- state ----------------------------------------------------------------------------------

class IteratorState:
    """What SerializeIterator's variant holds: the iterator's state by key. In a
    checkpoint it is a VariantTensorDataProto ("tensorflow::Iterator"): a string tensor
    of the keys, then one tensor per key (`bytes()`; `from_bytes` reads it back)."""

    __slots__ = ("state",)
    TYPE_NAME = "tensorflow::Iterator"

    def __init__(self, state: dict):
        self.state = state

    def __bytes__(self) -> bytes:
        proto = tensor_pb2.VariantTensorDataProto(type_name=self.TYPE_NAME)
        keys = sorted(self.state)
        proto.tensors.append(tensor_util.make_tensor_proto(
            np.array([k.encode() for k in keys], dtype=object)))
        for k in keys:
            value = np.asarray(self.state[k])
            if value.dtype == object and not all(isinstance(v, bytes)
                                                 for v in value.reshape(-1)):
                raise errors.UnimplementedError(
                    None, None, f"The iterator state {k} holds a dataset object: this "
                                f"iterator (an interleave with open elements) can be "
                                f"serialized within a session but not written to a "
                                f"checkpoint")
            proto.tensors.append(tensor_util.make_tensor_proto(value))
        return proto.SerializeToString()

    @classmethod
    def from_bytes(cls, data: bytes) -> IteratorState:
        proto = tensor_pb2.VariantTensorDataProto()
        try:
            proto.ParseFromString(data)
        except Exception as e:  # noqa: BLE001 - any parse failure
            raise errors.DataLossError(None, None, "Could not parse the iterator state") from e
        if proto.type_name != cls.TYPE_NAME or not proto.tensors:
            raise errors.InvalidArgumentError(
                None, None, f"DeserializeIterator: expected a {cls.TYPE_NAME} state, got "
                            f"'{proto.type_name}'")
        keys = tensor_util.make_ndarray(proto.tensors[0]).reshape(-1)
        values = [tensor_util.make_ndarray(t) for t in proto.tensors[1:]]
        return cls({k.decode("utf-8", "surrogateescape"): v
                    for k, v in zip(keys, values, strict=True)})


@register_kernel("SerializeIterator", "CPU")
class SerializeIteratorOp(AsyncOpKernel):
    """The iterator's state (a prefetch in the middle of an element is awaited)."""

    async def compute_async(self, ctx, inputs):
        out = np.empty((), dtype=object)
        out[()] = IteratorState(await resource_of(ctx, inputs[0]).save())
        return (out,)


@register_kernel("DeserializeIterator", "CPU")
class DeserializeIteratorOp(AsyncOpKernel):
    """Restore the iterator's state (an element's function may run: awaited)."""

    async def compute_async(self, ctx, inputs):
        item = inputs[1][()] if isinstance(inputs[1], np.ndarray) else inputs[1]
        if isinstance(item, bytes):  # read back from a checkpoint
            item = IteratorState.from_bytes(item)
        if not isinstance(item, IteratorState):
            raise errors.InvalidArgumentError(
                None, None, "DeserializeIterator: the serialized value is not an iterator "
                            "state")
        await resource_of(ctx, inputs[0]).restore(item.state)
        return ()
