"""ClusterSession: what a client Session runs on when its target is a cluster's master
("grpc://host:port"): DirectSession's client-facing methods, carried out by a master
(TF's GrpcSession). The graph's new nodes are sent with the next run (ExtendSession;
CreateSession on the first), a run is one RunStep; the master builds, registers and
caches per signature, so every signature is "cached" here."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from aioflow.framework import errors
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.proto import config_pb2, graph_pb2


@dataclass(frozen=True)
class Signature:
    """A run's (feeds, fetches, targets); `feeds` orders the run's arguments."""

    feeds: tuple
    fetches: tuple
    targets: tuple
    # (Not a field.) A cluster's step is never one local compiled call (ExecutorsAndKeys'
    # `whole`, which the client's fast paths look for).
    whole = None


class ClusterSession:
    """The client's side of one master session."""

    def __init__(self, target: str, config, master):
        self.target = target
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.master = master
        self._lock = threading.Lock()
        self._pending = graph_pb2.GraphDef()  # nodes not yet sent to the master
        self._has_pending = False
        self._handle: str | None = None
        self._send_lock: asyncio.Lock | None = None
        self.closed = False

    # -- the graph ------------------------------------------------------------------------
    def extend_nodes(self, node_defs, versions=None, blocking: bool = True,
                     validated: bool = False, library=None, arg_types=None) -> bool:
        """Queue nodes for the master (sent before the next run)."""
        self._check_open()
        with self._lock:
            self._pending.node.extend(node_defs)
            if versions is not None:
                self._pending.versions.CopyFrom(versions)
            if library is not None:
                proto = (library.to_proto() if isinstance(library, FunctionLibraryDefinition)
                         else library)
                self._pending.library.CopyFrom(proto)
            self._has_pending = True
        return True

    def extend(self, graph_def: graph_pb2.GraphDef) -> None:
        self.extend_nodes(graph_def.node, graph_def.versions if graph_def.HasField(
            "versions") else None, library=graph_def.library if graph_def.HasField(
                "library") else None)

    def _take_pending(self) -> graph_pb2.GraphDef | None:
        with self._lock:
            if not self._has_pending:
                return None
            pending, self._pending = self._pending, graph_pb2.GraphDef()
            self._has_pending = False
            return pending

    async def _session(self) -> str:
        """The master session's handle, created (and then extended) as needed."""
        if self._send_lock is None:
            self._send_lock = asyncio.Lock()
        async with self._send_lock:
            pending = self._take_pending()
            if self._handle is None:
                self._handle = await self.master.create_session(
                    pending if pending is not None else graph_pb2.GraphDef(), self.config)
            elif pending is not None:
                await self.master.extend_session(self._handle, pending)
            return self._handle

    # -- signatures -----------------------------------------------------------------------
    def cached_executors(self, key: tuple) -> Signature:
        return Signature(*key)

    def get_executors(self, feeds, fetches, targets) -> Signature:
        return Signature(feeds, fetches, targets)

    async def get_executors_async(self, feeds, fetches, targets) -> Signature:
        return Signature(feeds, fetches, targets)

    def build_or_join(self, key) -> Signature:
        return Signature(*key)

    @staticmethod
    async def wait_for(result):
        return result

    # -- running ----------------------------------------------------------------------------
    async def run_executors(self, sig: Signature, args: list, options=None, run_metadata=None,
                            **_ignored) -> list:
        """One RunStep on the master."""
        self._check_open()
        handle = await self._session()
        feeds = dict(zip(sig.feeds, args, strict=True))
        return await self.master.run_step(handle, feeds, sig.fetches, sig.targets, options,
                                          run_metadata)

    def list_devices(self) -> list:
        """The cluster's devices, as the master sees them (TF's ListDevices)."""
        return self.master.list_devices_blocking(self._handle or "")

    def close(self):
        """Close the master session: an awaitable that finishes closing it (the client
        awaits it; not awaited, it closes on its own)."""
        if self.closed or self._handle is None:
            self.closed = True
            return None
        self.closed = True
        return _Closing(self.master, self._handle)

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")

    # -- not over a cluster ---------------------------------------------------------------
    async def partial_run_setup(self, *args, **kwargs):
        raise errors.UnimplementedError(None, None, "Partial runs are not supported on a "
                                                    "cluster target yet.")

    async def partial_run(self, *args, **kwargs):
        raise errors.UnimplementedError(None, None, "Partial runs are not supported on a "
                                                    "cluster target yet.")

    num_partial_runs = 0


class _Closing:
    """CloseSession, awaited by whoever awaits this, else sent without waiting (when
    the object is dropped unawaited)."""

    def __init__(self, master, handle: str):
        self.master = master
        self.handle = handle
        self.awaited = False

    def __await__(self):
        self.awaited = True
        return self.master.close_session(self.handle).__await__()

    def __del__(self):
        if not self.awaited:
            self.master.close_session_soon(self.handle)
