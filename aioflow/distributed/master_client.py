"""MasterClient: how a client session reaches a master (TF's MasterInterface): the
master of a server of this process, called on its home loop (TF's LocalMaster), or a
master in another process over gRPC (grpc_transport.GrpcMasterClient). Values are the
runtime's (NumPy arrays); GraphDefs and ConfigProtos are messages."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod


class MasterClient(ABC):
    """One master's MasterService, awaited (list_devices and reset also blocking, for
    TF's synchronous Session.list_devices and Session.reset)."""

    @abstractmethod
    async def create_session(self, graph_def, config) -> str: ...

    @abstractmethod
    async def extend_session(self, handle: str, graph_def) -> None: ...

    @abstractmethod
    async def run_step(self, handle: str, feeds: dict, fetches: tuple, targets: tuple,
                       options=None, run_metadata=None) -> list: ...

    @abstractmethod
    async def close_session(self, handle: str) -> None: ...

    @abstractmethod
    def list_devices_blocking(self, handle: str) -> list: ...

    @abstractmethod
    def reset_blocking(self, containers) -> None: ...

    @abstractmethod
    def close_session_soon(self, handle: str) -> None:
        """Close the session without waiting (the client's close is synchronous)."""


class LocalMaster(MasterClient):
    """The master of `server`, a started Server of this process."""

    def __init__(self, server):
        self.server = server

    async def create_session(self, graph_def, config) -> str:
        return await self.server.home.call(self.server.master.create_session(graph_def, config))

    async def extend_session(self, handle: str, graph_def) -> None:
        await self.server.home.call(self.server.master.extend_session(handle, graph_def))

    async def run_step(self, handle, feeds, fetches, targets, options=None,
                       run_metadata=None) -> list:
        return await self.server.home.call(self.server.master.run_step(
            handle, feeds, fetches, targets, options, run_metadata))

    async def close_session(self, handle: str) -> None:
        await self.server.home.call(self.server.master.close_session(handle))

    def close_session_soon(self, handle: str) -> None:
        loop = self.server.home.loop
        if not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.server.master.close_session(handle), loop)

    def list_devices_blocking(self, handle: str) -> list:
        return self.server.home.call_blocking(self.server.master.list_devices(handle))

    def reset_blocking(self, containers) -> None:
        self.server.home.call_blocking(self.server.master.reset(containers))
