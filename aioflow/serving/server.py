"""The model server: a ModelRegistry, the REST app and the gRPC server on one event
loop. `await server.start()` loads the models (off the loop) and binds the ports;
`await server.stop()` shuts down gracefully: the ports stop accepting, requests in
flight finish (up to `grace_s`), then the models unload."""

from __future__ import annotations

import asyncio
import logging
import signal
import time

import grpc
from aiohttp import web

from aioflow.serving.batching import BatchingOptions
from aioflow.serving.connection_guard import ConnectionGuard
from aioflow.serving.grpc_service import GrpcApi
from aioflow.serving.http_server import HttpServer
from aioflow.serving.metrics import ServingMetrics
from aioflow.serving.model_registry import ModelConfig, ModelRegistry
from aioflow.serving.predict import PredictService
from aioflow.serving.rest_app import JsonAccessLogger, RestApi

_log = logging.getLogger("aioflow.serving")
#: At a stop, the gRPC server stops once no call has started for this long.
GRPC_QUIET_S = 0.05


class ModelServer:
    """Serves `models` over gRPC on `port` and REST on `rest_api_port` (None: no REST;
    0: any free port, as the bound ports are then read from `grpc_port`/`rest_port`).
    `rest_api_server` picks the REST server: "native" (http_server.py, lean) or
    "aiohttp" (rest_app's aiohttp app, the one an app embeds). `reuse_port` binds with
    SO_REUSEPORT and `metrics_dir` is prometheus_client's multiprocess directory: a
    worker of `aioflow serve --workers N` (workers.py)."""

    def __init__(self, models: list[ModelConfig], *, host: str = "0.0.0.0",
                 port: int | None = 8500, rest_api_port: int | None = 8501,
                 batching: BatchingOptions | None = None, poll_seconds: float = 1.0,
                 rest_api_timeout_ms: int = 30000, max_request_bytes: int = 64 << 20,
                 access_log: bool = True, grace_s: float = 30.0,
                 rest_api_server: str = "native", reuse_port: bool = False,
                 metrics_dir: str | None = None):
        self.metrics = ServingMetrics(metrics_dir)
        self._reuse_port = reuse_port
        self.registry = ModelRegistry(models, poll_seconds, self.metrics)
        self.service = PredictService(self.registry, batching, self.metrics)
        self.host = host
        self._port = port
        self._rest_api_port = rest_api_port
        self._rest = RestApi(self.service, rest_api_timeout_ms, max_request_bytes)
        self._access_log = access_log
        if rest_api_server not in ("native", "aiohttp"):
            raise ValueError(f"rest_api_server must be native or aiohttp, got "
                             f"{rest_api_server!r}")
        self._rest_api_server = rest_api_server
        self._http: HttpServer | None = None
        self.grace_s = grace_s
        self._runner: web.AppRunner | None = None
        self._guard: ConnectionGuard | None = None
        self._grpc: grpc.aio.Server | None = None
        self._grpc_api: GrpcApi | None = None
        self.grpc_port: int | None = None
        self.rest_port: int | None = None
        self._stopped = asyncio.Event()
        self._stopping = False

    async def start(self, on_loaded=None) -> None:
        """Load the models, await `on_loaded()` when given (before any port is bound),
        then bind the ports."""
        await self.registry.start()
        if on_loaded is not None:
            await on_loaded()
        if self._port is not None:
            # No message size limit (gRPC's default refuses requests over 4 MiB), as
            # TF Serving sets its server's to the largest there is.
            options = [("grpc.max_receive_message_length", -1),
                       ("grpc.max_send_message_length", -1)]
            if self._reuse_port:
                options.append(("grpc.so_reuseport", 1))  # beside the other workers
            self._grpc = grpc.aio.server(options=options)
            self._grpc_api = GrpcApi(self.service)
            self._grpc.add_generic_rpc_handlers(self._grpc_api.handlers())
            self.grpc_port = self._grpc.add_insecure_port(f"{self.host}:{self._port}")
            await self._grpc.start()
        if self._rest_api_port is not None and self._rest_api_server == "native":
            self._http = HttpServer(self._rest, logging.getLogger("aioflow.serving.access")
                                    if self._access_log else None)
            self.rest_port = await self._http.start(self.host, self._rest_api_port,
                                                    self._reuse_port)
        elif self._rest_api_port is not None:
            kwargs = {"access_log_class": JsonAccessLogger,
                      "access_log": logging.getLogger("aioflow.serving.access")} \
                if self._access_log else {"access_log": None}
            self._guard = ConnectionGuard()
            self._runner = web.AppRunner(self._rest.app([self._guard.middleware]),
                                         handler_cancellation=True,
                                         shutdown_timeout=self.grace_s, **kwargs)
            await self._runner.setup()
            site = _GuardedSite(self._guard, self._runner, self.host, self._rest_api_port,
                                reuse_port=self._reuse_port or None)
            await site.start()
            self._guard.start()
            self.rest_port = site._server.sockets[0].getsockname()[1]

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT begin a graceful stop."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish, unload the models."""
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        _log.info("aioflow serve: shutting down, finishing requests in flight")
        waits = []
        if self._grpc is not None:
            waits.append(self._stop_grpc(time.monotonic() + self.grace_s))
        if self._runner is not None:
            self._guard.stop()
            waits.append(self._runner.cleanup())
        if self._http is not None:
            waits.append(self._http.stop(self.grace_s))
        await asyncio.gather(*waits)
        self._rest.close()
        await self.registry.close()
        self._stopped.set()

    async def _stop_grpc(self, deadline: float) -> None:
        """Stop the gRPC server once the calls that have arrived are dispatched, then
        let them finish until `deadline`. grpc's stop cancels the calls that reached
        the server but were not yet handed to a handler (the server takes them one at
        a time), so first the server goes on taking calls until none has started for
        GRPC_QUIET_S (or the deadline comes)."""
        api = self._grpc_api
        last = -1
        while api.calls_started != last and time.monotonic() < deadline:
            last = api.calls_started
            await asyncio.sleep(GRPC_QUIET_S)
        await self._grpc.stop(max(0.0, deadline - time.monotonic()))

    async def wait_stopped(self) -> None:
        await self._stopped.wait()


class _GuardedSite(web.TCPSite):
    """aiohttp's TCP site, its connections under a ConnectionGuard."""

    def __init__(self, guard: ConnectionGuard, runner, host, port, **kwargs):
        super().__init__(runner, host, port, **kwargs)
        self._guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._guard.factory(self._runner.server), self._host, self._port,
            backlog=self._backlog, reuse_address=self._reuse_address,
            reuse_port=self._reuse_port)
