"""`aioflow serve`: the flags (flags.py) to ModelConfigs and BatchingOptions, then the
ModelServer until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys

from google.protobuf import json_format, text_format

from aioflow.client import kernel_compiles
from aioflow.proto import config_pb2
from aioflow.proto.serving import batching_parameters_pb2, model_server_config_pb2
from aioflow.serving.batching import BatchingOptions
from aioflow.serving.gc_guard import GcGuard
from aioflow.serving.loader import LoadOptions, parse_tensor_flags
from aioflow.serving.model_registry import ModelConfig, VersionPolicy
from aioflow.serving.workers import run_workers


def _read_message(path: str, message):
    """A protobuf message from a text-format file, or JSON when the file ends in .json."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if path.endswith(".json"):
            json_format.Parse(text, message)
        else:
            text_format.Parse(text, message)
    except (json_format.ParseError, text_format.ParseError) as e:
        raise ValueError(f"{path}: {e}") from None
    return message


def _policy(config) -> VersionPolicy:
    policy = config.model_version_policy
    choice = policy.WhichOneof("policy_choice")
    if choice == "all":
        return VersionPolicy("all")
    if choice == "specific":
        return VersionPolicy("specific", versions=frozenset(policy.specific.versions))
    num = policy.latest.num_versions if choice == "latest" else 1
    return VersionPolicy("latest", num_versions=num or 1)


def model_configs(args) -> list[ModelConfig]:
    """The models the flags name: --model_config_file, or --model_name and
    --model_base_path."""
    session_config = config_pb2.ConfigProto(
        intra_op_parallelism_threads=args.tensorflow_intra_op_parallelism,
        inter_op_parallelism_threads=args.tensorflow_inter_op_parallelism)
    options = LoadOptions(
        tags=tuple(t for t in args.saved_model_tags.split(",") if t),
        graph_file=args.graph_file, inputs=tuple(parse_tensor_flags(args.inputs)),
        outputs=tuple(parse_tensor_flags(args.outputs)), session_config=session_config)
    if args.model_config_file:
        server_config = _read_message(args.model_config_file,
                                      model_server_config_pb2.ModelServerConfig())
        if server_config.WhichOneof("config") != "model_config_list":
            raise ValueError(f"{args.model_config_file}: only model_config_list is supported")
        configs = []
        for c in server_config.model_config_list.config:
            if c.model_platform not in ("", "tensorflow"):
                raise ValueError(f"model {c.name}: model_platform {c.model_platform!r} is "
                                 "not supported (tensorflow is)")
            base = c.base_path if os.path.isabs(c.base_path) else os.path.join(
                os.path.dirname(os.path.abspath(args.model_config_file)), c.base_path)
            configs.append(ModelConfig(c.name, base, _policy(c), dict(c.version_labels),
                                       options))
        return configs
    if not args.model_base_path:
        raise ValueError("give --model_base_path (with --model_name) or --model_config_file")
    return [ModelConfig(args.model_name, os.path.abspath(args.model_base_path),
                        load_options=options)]


def batching_options(args) -> BatchingOptions | None:
    if not args.enable_batching:
        return None
    if not args.batching_parameters_file:
        return BatchingOptions()
    params = _read_message(args.batching_parameters_file,
                           batching_parameters_pb2.BatchingParameters())
    return BatchingOptions.from_proto(params)


async def serve(args, worker=None) -> int:
    """Serve until stopped; `worker` is (metrics_dir, parent pid) in a worker of
    --workers (workers.py)."""
    from aioflow.serving.server import ModelServer

    server = ModelServer(
        model_configs(args), host=args.host, port=args.port,
        rest_api_port=args.rest_api_port or None, batching=batching_options(args),
        poll_seconds=args.file_system_poll_wait_seconds,
        rest_api_timeout_ms=args.rest_api_timeout_in_ms,
        max_request_bytes=args.max_request_bytes, access_log=args.access_log,
        grace_s=args.shutdown_grace_seconds, rest_api_server=args.rest_api_server,
        reuse_port=worker is not None, metrics_dir=worker[0] if worker else None)
    server.install_signal_handlers()
    await server.start(on_loaded=_settle)
    failed = server.registry.unservable()
    if failed:  # as TF Serving, which does not start when a model's versions fail to load
        await server.stop()
        raise ValueError("no version could be loaded: " + "; ".join(
            f"{name}: {err}" for name, err in failed.items()))
    guard = GcGuard(asyncio.get_running_loop()).install()
    # One write with its newline: workers share stderr, and print's two writes (text,
    # then "\n") of two workers could interleave into one line.
    sys.stderr.write(f"aioflow serve: gRPC on {args.host}:{server.grpc_port}"
                     + (f", REST on {args.host}:{server.rest_port}" if server.rest_port
                        else "")
                     + f"; models {', '.join(server.registry.configs)}\n")
    sys.stderr.flush()
    if worker is not None:
        asyncio.ensure_future(_stop_when_orphaned(server, worker[1]))
    try:
        await server.wait_stopped()
    finally:
        guard.uninstall()
    return 0


async def _settle() -> None:
    """Before the ports open: the models' graphs and sessions live as long as the server,
    so out of the collector's way (gc.freeze), so that a full collection does not walk
    them (tens of ms, a latency spike); with them numba's objects, once the compile of
    the fused kernels' epilogue that their build started (a thread; cached on disk:
    ~0.3 s, a few s the first time on a machine) has ended. Later long-lived objects:
    gc_guard.GcGuard."""
    await asyncio.to_thread(kernel_compiles.wait_for_started_compiles, 60.0)
    gc.collect()
    gc.freeze()


async def _stop_when_orphaned(server, parent: int) -> None:
    """A worker stops when its parent is gone (killed without forwarding a signal)."""
    while os.getppid() == parent:
        await asyncio.sleep(1.0)
    await server.stop()


def _limit_blas_threads(threads: int) -> None:
    """--tensorflow_intra_op_parallelism for the BLAS calls of kernels that run on the
    loop thread too (the runtime bounds its pool threads' BLAS; a process-wide limit set
    here, on the first thread to use BLAS, covers the loop's)."""
    if threads > 0:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")


def run(args, worker=None) -> int:
    """Run the server in this process until it is stopped (with --workers N > 1: run N
    worker processes, workers.py)."""
    if getattr(args, "workers", 1) < 1:
        print(f"error: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 1
    if worker is None and getattr(args, "workers", 1) > 1:
        try:
            return run_workers(args, run)
        except ValueError as e:
            print(f"error: ValueError: {e}", file=sys.stderr)
            return 1
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        import aiohttp  # noqa: F401
        import grpc  # noqa: F401
        import httptools  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as e:
        print(f"error: aioflow serve needs the serve extra (pip install 'aioflow[serve]'): "
              f"{e}", file=sys.stderr)
        return 1
    _limit_blas_threads(args.tensorflow_intra_op_parallelism)
    try:
        import uvloop
    except ImportError:
        uvloop = None
    try:
        if uvloop is not None:
            return uvloop.run(serve(args, worker))
        return asyncio.run(serve(args, worker))
    except (ValueError, OSError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
