"""gRPC between tasks and from clients (grpcio's asyncio API), carrying TF's own
WorkerService and MasterService messages (worker.proto, master.proto) under TF's
service and method names ("/tensorflow.WorkerService/RunGraph", ...).

- `serve(server, address)`: a server's services on its home loop; each handler awaits
  the task's Worker or Master (nothing blocks the loop, no thread per call).
- GrpcRemoteWorker: a WorkerInterface of a task in another process. A RunGraph the
  master gives up on (another task failed first) is cancelled, which aborts the step
  there; a task that vanished answers UNAVAILABLE: UnavailableError.
- GrpcMasterClient: a MasterClient of a master in another process (TF's GrpcSession).

Errors travel as gRPC status codes, which are TF's; tensors as TensorProto content.
Between aioflow tasks a step's calls (RunGraph, RecvTensor(s), CleanupGraph, RunStep) go
on the peer's stream instead (stream_transport.py: the same messages, without grpcio's
cost per call), found with aioflow's StreamPort call; a TF peer has none and stays on gRPC.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import grpc
import numpy as np
from grpc import aio

from aioflow.distributed import shm_transfer, stream_transport
from aioflow.distributed.master_client import MasterClient
from aioflow.distributed.stream_transport import StreamChannel
from aioflow.distributed.wire import (
    decode_recv_tensor_response,
    decode_recv_tensors_request,
    decode_recv_tensors_response,
    encode_recv_tensor_response,
    encode_recv_tensors_request,
    encode_recv_tensors_response,
    error_of,
    from_proto,
    to_proto,
)
from aioflow.distributed.worker_interface import WorkerInterface
from aioflow.framework import errors
from aioflow.graph.graph import Graph
from aioflow.proto import (
    config_pb2,
    device_attributes_pb2,
    graph_pb2,
    master_pb2,
    named_tensor_pb2,
    worker_pb2,
)
from aioflow.runtime.device import DeviceAttributes


class _RecvTensorWire:
    """RecvTensorResponse as (value, is_dead), written and read without copying the
    tensor (wire.py); the same bytes as TF's message."""

    SerializeToString = staticmethod(encode_recv_tensor_response)
    FromString = staticmethod(decode_recv_tensor_response)


class _RecvTensorsRequestWire:
    SerializeToString = staticmethod(encode_recv_tensors_request)
    FromString = staticmethod(decode_recv_tensors_request)


class _RecvTensorsResponseWire:
    SerializeToString = staticmethod(encode_recv_tensors_response)
    FromString = staticmethod(decode_recv_tensors_response)


class _Raw:
    """Bytes as they are (StreamPort's empty request, its answer)."""

    @staticmethod
    def SerializeToString(data: bytes) -> bytes:  # noqa: N802 - grpc's serializer names
        return data

    @staticmethod
    def FromString(data: bytes) -> bytes:  # noqa: N802
        return data


WORKER_SERVICE = "tensorflow.WorkerService"
#: aioflow's own calls between its tasks (beside TF's WorkerService): RecvTensors, the
#: tensors of several keys of one step in one call; StreamPort, the port of the task's
#: stream (stream_transport.py; b"" when it has none).
EXTENSION_SERVICE = "aioflow.WorkerExtension"
_EXTENSION_METHODS = {"RecvTensors": (_RecvTensorsRequestWire, _RecvTensorsResponseWire),
                      "StreamPort": (_Raw, _Raw)}
MASTER_SERVICE = "tensorflow.MasterService"
# Unlimited message sizes (a 64 MB tensor is one message), as TF configures its channels.
_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
# A task that comes back is reached again within a second (gRPC's default backoff
# grows to two minutes).
_CHANNEL_OPTIONS = _OPTIONS + [("grpc.use_local_subchannel_pool", 1),  # a new channel: a
                               # new connection, not the process-wide one in backoff
                               ("grpc.initial_reconnect_backoff_ms", 100),
                               ("grpc.min_reconnect_backoff_ms", 100),
                               ("grpc.max_reconnect_backoff_ms", 1000)]
# Calls made again on a fresh connection when the old one had failed.
_RETRIED = frozenset({"GetStatus", "RegisterGraph", "DeregisterGraph", "CleanupGraph",
                      "CleanupAll"})
# Control calls wait for a task being (re)started; a step's calls fail at once.
_WAIT_FOR_READY = frozenset({"CreateSession"})
# How long CreateSession waits for a master not up yet (then UnavailableError).
MASTER_WAIT_S = 60.0
# How long a call that should answer at once (GetStatus, Register, Cleanup) may take.
CONTROL_TIMEOUT_S = 10.0
# How long connecting to a task's stream port may take before the task is called over
# gRPC instead.
STREAM_CONNECT_S = 3.0

_WORKER_METHODS = {
    "GetStatus": (worker_pb2.GetStatusRequest, worker_pb2.GetStatusResponse),
    "CreateWorkerSession": (worker_pb2.CreateWorkerSessionRequest,
                            worker_pb2.CreateWorkerSessionResponse),
    "DeleteWorkerSession": (worker_pb2.DeleteWorkerSessionRequest,
                            worker_pb2.DeleteWorkerSessionResponse),
    "RegisterGraph": (worker_pb2.RegisterGraphRequest, worker_pb2.RegisterGraphResponse),
    "DeregisterGraph": (worker_pb2.DeregisterGraphRequest, worker_pb2.DeregisterGraphResponse),
    "RunGraph": (worker_pb2.RunGraphRequest, worker_pb2.RunGraphResponse),
    "CleanupGraph": (worker_pb2.CleanupGraphRequest, worker_pb2.CleanupGraphResponse),
    "CleanupAll": (worker_pb2.CleanupAllRequest, worker_pb2.CleanupAllResponse),
    "RecvTensor": (worker_pb2.RecvTensorRequest, _RecvTensorWire),
}
_MASTER_METHODS = {
    "CreateSession": (master_pb2.CreateSessionRequest, master_pb2.CreateSessionResponse),
    "ExtendSession": (master_pb2.ExtendSessionRequest, master_pb2.ExtendSessionResponse),
    "RunStep": (master_pb2.RunStepRequest, master_pb2.RunStepResponse),
    "CloseSession": (master_pb2.CloseSessionRequest, master_pb2.CloseSessionResponse),
    "ListDevices": (master_pb2.ListDevicesRequest, master_pb2.ListDevicesResponse),
    "Reset": (master_pb2.ResetRequest, master_pb2.ResetResponse),
}


#: RPCs of this process, by ("sent" | "served", "grpc" | "stream", method name): what a
#: test or a benchmark counts per step.
RPC_COUNTS: Counter = Counter()


# -- the server side --------------------------------------------------------------------
def _handlers(service: str, methods: dict, impl) -> grpc.GenericRpcHandler:
    def unary(name, request_cls, response_cls):
        fn = getattr(impl, name)

        async def call(request, context):
            RPC_COUNTS["served", "grpc", name] += 1
            try:
                return await fn(request)
            except errors.OpError as e:
                await context.abort(grpc.StatusCode(_status(e.error_code)), e.message)

        return grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=request_cls.FromString,
            response_serializer=response_cls.SerializeToString)

    return grpc.method_handlers_generic_handler(
        service, {name: unary(name, *types) for name, types in methods.items()})


def _status(code: int) -> tuple:
    """The grpc.StatusCode value tuple of a TF code."""
    for status in grpc.StatusCode:
        if status.value[0] == code:
            return status.value
    return grpc.StatusCode.UNKNOWN.value


class _WorkerService:
    """TF's WorkerService over a Worker."""

    def __init__(self, worker):
        self.worker = worker
        self.writer = shm_transfer.WriterCache()
        self.stream_port = 0  # the task's stream port (none: 0)
        # (step id, key) -> the receive a RecvTensors started and has not answered yet
        self.waiting: dict[tuple, asyncio.Task] = {}

    async def GetStatus(self, request):  # noqa: N802 - TF's method names
        return worker_pb2.GetStatusResponse(device_attributes=await self.worker.get_status())

    async def CreateWorkerSession(self, request):  # noqa: N802
        return worker_pb2.CreateWorkerSessionResponse()

    async def DeleteWorkerSession(self, request):  # noqa: N802
        return worker_pb2.DeleteWorkerSessionResponse()

    async def RegisterGraph(self, request):  # noqa: N802
        config = request.config_proto if request.HasField("config_proto") else None
        handle = await self.worker.register_graph(request.graph_def, config)
        return worker_pb2.RegisterGraphResponse(graph_handle=handle)

    async def DeregisterGraph(self, request):  # noqa: N802
        await self.worker.deregister_graph(request.graph_handle)
        return worker_pb2.DeregisterGraphResponse()

    async def RunGraph(self, request):  # noqa: N802
        sends = {t.name: from_proto(t.tensor) for t in request.send}
        got = await self.worker.run_graph(request.graph_handle, request.step_id, sends,
                                          list(request.recv_key))
        response = worker_pb2.RunGraphResponse()
        for key, (value, is_dead) in got.items():
            if not is_dead:
                response.recv.append(named_tensor_pb2.NamedTensorProto(
                    name=key, tensor=to_proto(value)))
        return response

    async def CleanupGraph(self, request):  # noqa: N802
        await self.worker.cleanup_graph(request.step_id)
        for step_key in [k for k in self.waiting if k[0] == request.step_id]:
            self.waiting.pop(step_key).cancel()
        return worker_pb2.CleanupGraphResponse()

    async def RecvTensors(self, request):  # noqa: N802 - (aioflow's, EXTENSION_SERVICE)
        """The tensors of those keys that are ready once one is (never waiting for all: a
        key's value may depend on what the caller does with another's); the caller asks
        again for the rest, whose receives go on here meanwhile. A large numeric tensor
        goes through a new shared-memory file when the caller allows it."""
        step_id, keys, dma_ok = request
        tasks = []
        for key in keys:
            task = self.waiting.get((step_id, key))
            if task is None:
                task = asyncio.ensure_future(self.worker.recv_tensor(step_id, key))
                self.waiting[(step_id, key)] = task
                task.add_done_callback(self._forget_failed)
            tasks.append((key, task))
        await asyncio.wait([t for _, t in tasks], return_when=asyncio.FIRST_COMPLETED)
        await asyncio.sleep(0)  # (what the same executor pass sent comes along)
        items = []
        for key, task in tasks:
            if task.done():
                self.waiting.pop((step_id, key), None)
                value, is_dead = task.result()  # (a failed step's error ends the call)
                items.append((key, await self._shared(value, is_dead, dma_ok)))
        return items

    def _forget_failed(self, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is not None:
            for step_key, waiting in list(self.waiting.items()):
                if waiting is task:
                    del self.waiting[step_key]

    @staticmethod
    async def _shared(value, is_dead: bool, dma_ok: bool) -> tuple:
        if (dma_ok and not is_dead and isinstance(value, np.ndarray)
                and value.nbytes >= shm_transfer.MIN_BYTES and value.dtype.kind in "biufc"):
            loop = asyncio.get_running_loop()
            path = await loop.run_in_executor(None, shm_transfer.write, value)
            shm_transfer.remove_later(path, loop)
            return value, False, path
        return value, is_dead

    async def StreamPort(self, request):  # noqa: N802 - (aioflow's, EXTENSION_SERVICE)
        return str(self.stream_port).encode() if self.stream_port else b""

    async def CleanupAll(self, request):  # noqa: N802
        await self.worker.cleanup_all(list(request.container))
        return worker_pb2.CleanupAllResponse()

    async def RecvTensor(self, request):  # noqa: N802
        """The value; a large numeric one through a shared-memory file when the receiver
        is on this machine (it says so with dma_ok), written off the loop."""
        value, is_dead = await self.worker.recv_tensor(request.step_id,
                                                       request.rendezvous_key)
        if (request.dma_ok and not is_dead and isinstance(value, np.ndarray)
                and value.nbytes >= shm_transfer.MIN_BYTES and value.dtype.kind in "biufc"):
            loop = asyncio.get_running_loop()
            offered = request.transport_options
            path = None
            if offered.type_url == shm_transfer.OFFER_TYPE_URL and offered.value:
                path = await loop.run_in_executor(None, self.writer.write_into,
                                                  offered.value, value)
            if path is None:
                path = await loop.run_in_executor(None, shm_transfer.write, value)
                shm_transfer.remove_later(path, loop)
            return value, False, path
        return value, is_dead


class _MasterService:
    """TF's MasterService over a Master."""

    def __init__(self, master):
        self.master = master

    async def CreateSession(self, request):  # noqa: N802
        config = request.config if request.HasField("config") else None
        handle = await self.master.create_session(request.graph_def, config)
        return master_pb2.CreateSessionResponse(session_handle=handle)

    async def ExtendSession(self, request):  # noqa: N802
        await self.master.extend_session(request.session_handle, request.graph_def)
        return master_pb2.ExtendSessionResponse()

    async def RunStep(self, request):  # noqa: N802
        feeds = {t.name: from_proto(t.tensor) for t in request.feed}
        options = request.options if request.HasField("options") else None
        metadata = config_pb2.RunMetadata()
        values = await self.master.run_step(request.session_handle, feeds,
                                            tuple(request.fetch), tuple(request.target),
                                            options, metadata)
        response = master_pb2.RunStepResponse(metadata=metadata)
        for name, value in zip(request.fetch, values, strict=True):
            response.tensor.append(named_tensor_pb2.NamedTensorProto(
                name=name, tensor=to_proto(value)))
        return response

    async def CloseSession(self, request):  # noqa: N802
        await self.master.close_session(request.session_handle)
        return master_pb2.CloseSessionResponse()

    async def ListDevices(self, request):  # noqa: N802
        return master_pb2.ListDevicesResponse(remote_device=[
            device_attributes_pb2.DeviceAttributes(
                name=d.name, device_type=d.device_type, memory_limit=d.memory_limit_bytes,
                incarnation=d.incarnation)
            for d in await self.master.list_devices(request.session_handle)])

    async def Reset(self, request):  # noqa: N802
        await self.master.reset(list(request.container))
        return master_pb2.ResetResponse()


class Serving:
    """A server's gRPC service and its stream (stream_transport.py), stopped together."""

    def __init__(self, grpc_server, stream=None):
        self.grpc_server = grpc_server
        self.stream = stream

    async def stop(self, grace=None) -> None:
        if self.stream is not None:
            self.stream.close()
        await self.grpc_server.stop(grace=grace)


async def serve(server, address: str) -> tuple:
    """Start `server`'s WorkerService and MasterService on `address` (port 0: any free
    one), and its stream on another port of the same host (unless turned off); (a
    Serving, the bound gRPC port)."""
    grpc_server = aio.server(options=_OPTIONS)
    worker = _WorkerService(server.worker)
    master = _MasterService(server.master)
    grpc_server.add_generic_rpc_handlers((
        _handlers(WORKER_SERVICE, _WORKER_METHODS, worker),
        _handlers(EXTENSION_SERVICE, _EXTENSION_METHODS, worker),
        _handlers(MASTER_SERVICE, _MASTER_METHODS, master)))
    port = grpc_server.add_insecure_port(address)
    if port == 0:
        raise errors.UnavailableError(None, None, f"Could not start gRPC server on {address}")
    stream = None
    if stream_transport.ENABLED:
        handlers = {}
        for name in stream_transport.METHODS:
            impl, methods = ((master, _MASTER_METHODS) if name in _MASTER_METHODS else
                             (worker, _WORKER_METHODS if name in _WORKER_METHODS
                              else _EXTENSION_METHODS))
            request_cls, response_cls = methods[name]
            handlers[name] = (getattr(impl, name), request_cls.FromString,
                              response_cls.SerializeToString)
        try:
            stream = await stream_transport.serve(address.rpartition(":")[0], handlers,
                                                  RPC_COUNTS)
            worker.stream_port = stream.port
        except OSError:  # (no port for it: peers call this task over gRPC)
            stream = None
    await grpc_server.start()
    return Serving(grpc_server, stream), port


# -- the client side --------------------------------------------------------------------
def _op_error(e: aio.AioRpcError | grpc.RpcError, task: str = "") -> errors.OpError:
    code = e.code()
    message = e.details() or code.name
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and task:
        message = f"{message} (task {task})"
    return error_of(code.value[0], message)


class _Stubs:
    """Unary callables of one service on a channel."""

    def __init__(self, channel, service: str, methods: dict):
        for name, (request_cls, response_cls) in methods.items():
            setattr(self, name, channel.unary_unary(
                f"/{service}/{name}", request_serializer=request_cls.SerializeToString,
                response_deserializer=response_cls.FromString))


class _StreamLink:
    """The stream connection to one peer (stream_transport.py), opened on first use:
    `ask_port()` (the peer's StreamPort over gRPC) says where. None for a peer that has
    none (a TF server answers UNIMPLEMENTED); once lost, the next call asks again (the
    peer may be a new process)."""

    def __init__(self, address: str, task: str, ask_port):
        self.host = address.rpartition(":")[0]
        self.task = task
        self.ask_port = ask_port
        self.channel: StreamChannel | None = None
        self.absent = not stream_transport.ENABLED
        self._opening: asyncio.Future | None = None

    async def get(self) -> StreamChannel | None:
        channel = self.channel
        if channel is not None and not channel.lost:
            return channel
        if self.absent:
            return None
        if self._opening is None or self._opening.done():
            self._opening = asyncio.ensure_future(self._open())
        return await asyncio.shield(self._opening)

    async def _open(self) -> StreamChannel | None:
        try:
            port = await self.ask_port()
        except errors.UnimplementedError:
            port = b""
        if not port:
            self.absent = True
            return None
        try:
            self.channel = await asyncio.wait_for(
                StreamChannel.connect(self.host, int(port), self.task), STREAM_CONNECT_S)
        except (OSError, TimeoutError):
            # The task answers over gRPC but its stream port cannot be reached (a
            # firewall that lets the cluster's ports through only): gRPC from now on.
            self.absent = True
            return None
        return self.channel

    async def call(self, name: str, methods: dict, request, timeout):
        """Method `name` on the stream, or None when the peer has no stream."""
        channel = await self.get()
        if channel is None:
            return None
        RPC_COUNTS["sent", "stream", name] += 1
        request_cls, response_cls = methods[name]
        return await channel.call(name, request_cls.SerializeToString(request),
                                  response_cls.FromString, timeout)

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()


class GrpcRemoteWorker(WorkerInterface):
    """A task of another process, over gRPC (used on one event loop: its server's)."""

    def __init__(self, address: str, task: str):
        self.address = address
        self.task = task
        self._channel = None
        self._stubs = None
        self._runs: dict[int, asyncio.Task] = {}  # step id -> the RunGraph in flight
        # A task on this machine may hand large tensors over in shared memory (into
        # buffers of ours it writes again step after step).
        self._same_machine = (shm_transfer.available()
                              and shm_transfer.is_local_host(address.rpartition(":")[0]))
        self._pool = shm_transfer.BufferPool() if self._same_machine else None
        self._pending: dict[int, dict] = {}  # step id -> {key: future}, this loop turn's
        self._stream = _StreamLink(address, task, self._stream_port)

    @property
    def stubs(self) -> _Stubs:
        if self._stubs is None:
            self._channel = aio.insecure_channel(self.address, options=_CHANNEL_OPTIONS)
            self._stubs = _Stubs(self._channel, WORKER_SERVICE, _WORKER_METHODS)
            extension = _Stubs(self._channel, EXTENSION_SERVICE, _EXTENSION_METHODS)
            self._stubs.RecvTensors = extension.RecvTensors
            self._stubs.StreamPort = extension.StreamPort
        return self._stubs

    async def _stream_port(self) -> bytes:
        return await self._grpc_call("StreamPort", b"")

    async def _call(self, name: str, request, timeout: float | None = CONTROL_TIMEOUT_S):
        """Method `name`: on the task's stream where it has one (a step's calls), else
        over gRPC."""
        if name in stream_transport.CODES:
            methods = _EXTENSION_METHODS if name == "RecvTensors" else _WORKER_METHODS
            try:
                answer = await self._stream.call(name, methods, request, timeout)
            except errors.UnavailableError:
                self._stubs = None  # (the task went away: a fresh gRPC connection too)
                raise
            if answer is not None:
                return answer
        return await self._grpc_call(name, request, timeout)

    async def _grpc_call(self, name: str, request,
                         timeout: float | None = CONTROL_TIMEOUT_S):
        fresh = self._stubs is None
        RPC_COUNTS["sent", "grpc", name] += 1
        try:
            return await getattr(self.stubs, name)(request, timeout=timeout,
                                                   wait_for_ready=name in _WAIT_FOR_READY)
        except aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise _op_error(e, self.task) from None
            self._stubs = None  # the task went away: a fresh connection next time
            if fresh or name not in _RETRIED:
                raise _op_error(e, self.task) from None
        # A control call on a connection that failed before: once more on a new one (the
        # task may be back; the old connection waits out its backoff).
        return await self._grpc_call(name, request, timeout)

    async def get_status(self) -> list:
        response = await self._call("GetStatus", worker_pb2.GetStatusRequest())
        return list(response.device_attributes)

    async def register_graph(self, graph, config) -> str:
        request = worker_pb2.RegisterGraphRequest(graph_def=_as_graph_def(graph))
        if config is not None:
            request.config_proto.CopyFrom(config)
        return (await self._call("RegisterGraph", request)).graph_handle

    async def deregister_graph(self, handle: str) -> None:
        await self._call("DeregisterGraph", worker_pb2.DeregisterGraphRequest(
            graph_handle=handle))

    async def run_graph(self, handle, step_id, sends, recv_keys, timeout_s=None) -> dict:
        request = worker_pb2.RunGraphRequest(graph_handle=handle, step_id=step_id,
                                             recv_key=recv_keys)
        for key, value in sends.items():
            request.send.append(named_tensor_pb2.NamedTensorProto(name=key,
                                                                   tensor=to_proto(value)))
        task = asyncio.ensure_future(self._call("RunGraph", request, timeout_s))
        self._runs[step_id] = task
        try:
            response = await task
        finally:
            self._runs.pop(step_id, None)
        got = {t.name: (from_proto(t.tensor), False) for t in response.recv}
        return {key: got.get(key, (None, True)) for key in recv_keys}

    async def recv_tensor(self, step_id: int, key: str) -> tuple:
        """The tensor of `key`. The keys of one step asked for in the same turn of the
        loop go in one RecvTensors call (one key alone: TF's RecvTensor)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        pending = self._pending.get(step_id)
        if pending is None:
            pending = self._pending[step_id] = {}
            loop.call_soon(self._flush, step_id)
        pending[key] = future
        return await future

    def _flush(self, step_id: int) -> None:
        futures = self._pending.pop(step_id)
        task = asyncio.ensure_future(self._recv_many(step_id, futures))

        def cancel_when_unwanted(_):
            if all(f.done() for f in futures.values()):
                task.cancel()
        for future in futures.values():
            future.add_done_callback(cancel_when_unwanted)

    async def _recv_many(self, step_id: int, futures: dict) -> None:
        """Resolve `futures` (key -> future): one key alone by RecvTensor; several by
        RecvTensors calls, each answering those ready, until none is left (the peer
        keeps receiving the others meanwhile: they are asked for there again, never by
        RecvTensor)."""
        try:
            if len(futures) == 1:
                (key, future), = futures.items()
                got = await self._recv_one(step_id, key)
                if not future.done():
                    future.set_result(got)
                return
            while left := [k for k, f in futures.items() if not f.done()]:
                got = await self._call("RecvTensors", (step_id, left, self._same_machine),
                                       timeout=None)
                for key, (value, is_dead) in got:
                    if isinstance(value, shm_transfer.Incoming):
                        value = value.array()
                    if not futures[key].done():
                        futures[key].set_result((value, is_dead))
        except BaseException as e:
            for future in futures.values():
                if future.done():
                    continue
                if isinstance(e, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(e)
            if not isinstance(e, Exception):
                raise

    async def _recv_one(self, step_id: int, key: str) -> tuple:
        request = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key,
                                               dma_ok=self._same_machine)
        if self._pool is None:
            return await self._call("RecvTensor", request, timeout=None)
        offered = self._pool.offer()
        if offered:
            request.transport_options.type_url = shm_transfer.OFFER_TYPE_URL
            request.transport_options.value = offered
        try:
            value, is_dead = await self._call("RecvTensor", request, timeout=None)
        except BaseException:
            self._pool.drop_offered(offered)  # (its sender may still be writing there)
            raise
        incoming = value if isinstance(value, shm_transfer.Incoming) else None
        array = self._pool.settle(offered, incoming)
        return (value if array is None else array), is_dead

    async def abort_step(self, step_id: int, error) -> None:
        run = self._runs.get(step_id)
        if run is not None:
            run.cancel()  # the cancelled RunGraph aborts the step on that task

    async def cleanup_graph(self, step_id: int) -> None:
        await self._call("CleanupGraph", worker_pb2.CleanupGraphRequest(step_id=step_id))

    async def cleanup_all(self, containers) -> None:
        await self._call("CleanupAll", worker_pb2.CleanupAllRequest(container=containers))

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        self._stream.close()
        if self._channel is not None:
            await self._channel.close()


def _as_graph_def(graph) -> graph_pb2.GraphDef:
    """One GraphDef of a task's share ({device: Graph} in process, or a GraphDef)."""
    if isinstance(graph, graph_pb2.GraphDef):
        return graph
    merged = graph_pb2.GraphDef()
    for part in graph.values():
        part_def = part.to_graph_def() if isinstance(part, Graph) else part
        merged.versions.CopyFrom(part_def.versions)
        merged.node.extend(part_def.node)
        for fn in part_def.library.function:
            if all(f.signature.name != fn.signature.name for f in merged.library.function):
                merged.library.function.append(fn)
    return merged


class GrpcMasterClient(MasterClient):
    """A master in another process (one channel per event loop; blocking calls on a
    channel of their own)."""

    def __init__(self, address: str):
        self.address = address
        self._channels: dict = {}  # loop -> (channel, stubs, stream link)
        self._blocking = None

    def _entry(self) -> tuple:
        loop = asyncio.get_running_loop()
        entry = self._channels.get(loop)
        if entry is None:
            channel = aio.insecure_channel(self.address, options=_CHANNEL_OPTIONS)
            stubs = _Stubs(channel, MASTER_SERVICE, _MASTER_METHODS)
            stubs.StreamPort = _Stubs(channel, EXTENSION_SERVICE,
                                      _EXTENSION_METHODS).StreamPort
            link = _StreamLink(self.address, self.address,
                               lambda: self._call("StreamPort", b"", CONTROL_TIMEOUT_S))
            entry = self._channels[loop] = (channel, stubs, link)
        return entry

    def _stubs(self) -> _Stubs:
        return self._entry()[1]

    def _blocking_stubs(self) -> _Stubs:
        if self._blocking is None:
            channel = grpc.insecure_channel(self.address, options=_CHANNEL_OPTIONS)
            self._blocking = (channel, _Stubs(channel, MASTER_SERVICE, _MASTER_METHODS))
        return self._blocking[1]

    async def _call(self, name: str, request, timeout: float | None = None):
        if name in stream_transport.CODES:  # (RunStep: on the master's stream)
            answer = await self._entry()[2].call(name, _MASTER_METHODS, request, timeout)
            if answer is not None:
                return answer
        RPC_COUNTS["sent", "grpc", name] += 1
        try:
            return await getattr(self._stubs(), name)(request, timeout=timeout,
                                                      wait_for_ready=name in _WAIT_FOR_READY)
        except aio.AioRpcError as e:
            raise _op_error(e, self.address) from None

    def _call_blocking(self, name: str, request, timeout: float | None = CONTROL_TIMEOUT_S):
        try:
            return getattr(self._blocking_stubs(), name)(request, timeout=timeout)
        except grpc.RpcError as e:
            raise _op_error(e, self.address) from None

    async def create_session(self, graph_def, config) -> str:
        """CreateSession, waiting for the master to be up (TF's client waits too), at most
        the config's operation_timeout_in_ms or MASTER_WAIT_S."""
        request = master_pb2.CreateSessionRequest(graph_def=graph_def)
        timeout = MASTER_WAIT_S
        if config is not None:
            request.config.CopyFrom(config)
            if config.operation_timeout_in_ms > 0:
                timeout = config.operation_timeout_in_ms / 1000.0
        try:
            return (await self._call("CreateSession", request, timeout)).session_handle
        except errors.DeadlineExceededError as e:
            raise errors.UnavailableError(None, None, f"No master answered at "
                                                      f"{self.address}: {e.message}") from None

    async def extend_session(self, handle: str, graph_def) -> None:
        await self._call("ExtendSession", master_pb2.ExtendSessionRequest(
            session_handle=handle, graph_def=graph_def))

    async def run_step(self, handle, feeds, fetches, targets, options=None,
                       run_metadata=None) -> list:
        request = master_pb2.RunStepRequest(session_handle=handle, fetch=fetches,
                                            target=targets)
        for name, value in feeds.items():
            request.feed.append(named_tensor_pb2.NamedTensorProto(name=name,
                                                                  tensor=to_proto(value)))
        timeout = None
        if options is not None:
            request.options.CopyFrom(options)
            if options.timeout_in_ms > 0:  # (the master enforces it; a margin here)
                timeout = options.timeout_in_ms / 1000.0 + CONTROL_TIMEOUT_S
        response = await self._call("RunStep", request, timeout)
        if run_metadata is not None:
            run_metadata.MergeFrom(response.metadata)
        by_name = {t.name: t.tensor for t in response.tensor}
        return [from_proto(by_name[name]) for name in fetches]

    async def close_session(self, handle: str) -> None:
        try:
            await self._call("CloseSession", master_pb2.CloseSessionRequest(
                session_handle=handle), CONTROL_TIMEOUT_S)
        finally:
            await self._close_channels()

    def close_session_soon(self, handle: str) -> None:
        self._close_streams()
        try:
            done = self._blocking_stubs().CloseSession.future(
                master_pb2.CloseSessionRequest(session_handle=handle), timeout=CONTROL_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a master gone has nothing to close
            self._close_blocking()
        else:
            done.add_done_callback(lambda _: self._close_blocking())

    def _close_streams(self) -> None:
        """Close the stream connections (the session, this client's one, is over)."""
        for loop, (_, _, link) in self._channels.items():
            if link.channel is not None and not loop.is_closed():
                loop.call_soon_threadsafe(link.close)

    async def _close_channels(self) -> None:
        """Close every channel of this client (its session is over): the streams, each
        loop's gRPC channel on its own loop (this one's awaited), the blocking one."""
        self._close_streams()
        channels, self._channels = self._channels, {}
        here = asyncio.get_running_loop()
        for loop, (channel, _, _) in channels.items():
            if loop is here:
                await channel.close()
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(channel.close(), loop)
        self._close_blocking()

    def _close_blocking(self) -> None:
        if self._blocking is not None:
            self._blocking[0].close()
            self._blocking = None

    def list_devices_blocking(self, handle: str) -> list:
        response = self._call_blocking("ListDevices", master_pb2.ListDevicesRequest(
            session_handle=handle))
        return [DeviceAttributes(d.name, d.device_type, d.memory_limit, d.incarnation)
                for d in list(response.local_device) + list(response.remote_device)]

    def reset_blocking(self, containers) -> None:
        try:
            self._call_blocking("Reset", master_pb2.ResetRequest(container=containers or []))
        finally:
            self._close_blocking()
