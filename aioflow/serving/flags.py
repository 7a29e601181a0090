"""`aioflow serve`'s flags: TF Serving's tensorflow_model_server names where it has one
(--port, --rest_api_port, --model_name, --model_base_path, --model_config_file,
--enable_batching, --batching_parameters_file, --file_system_poll_wait_seconds,
--rest_api_timeout_in_ms, --saved_model_tags), aioflow's own for the rest. Pure argparse:
importing this needs none of the serving dependencies."""

from __future__ import annotations

import argparse


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the serve flags to `p`."""
    p.add_argument("--port", type=int, default=8500,
                   help="gRPC port (default 8500)")
    p.add_argument("--rest_api_port", type=int, default=0,
                   help="REST port; 0 (the default, as TF Serving's) serves no REST API")
    p.add_argument("--host", default="0.0.0.0",
                   help="address to listen on (default 0.0.0.0; 127.0.0.1 for loopback)")
    p.add_argument("--model_name", default="default",
                   help="the model's name in requests (default 'default')")
    p.add_argument("--model_base_path", default="",
                   help="directory of the model's numbered version subdirectories")
    p.add_argument("--model_config_file", default="",
                   help="several models: a ModelServerConfig in protobuf text format "
                        "(TF Serving's), or the same message as JSON (.json)")
    p.add_argument("--file_system_poll_wait_seconds", type=float, default=1.0,
                   help="seconds between polls for new versions; 0 polls once, at start")
    p.add_argument("--saved_model_tags", default="serve",
                   help="comma-separated tags of the SavedModel MetaGraphDef to load")
    p.add_argument("--graph_file", default="",
                   help="frozen GraphDef: the file in each version directory (default: the "
                        "single .pb or .pbtxt there)")
    p.add_argument("--inputs", action="append",
                   help="frozen GraphDef: signature inputs KEY=TENSOR or TENSOR, "
                        "comma-separated or repeated")
    p.add_argument("--outputs", action="append",
                   help="frozen GraphDef: signature outputs KEY=TENSOR or TENSOR")
    p.add_argument("--tensorflow_intra_op_parallelism", type=int, default=0,
                   help="threads of one kernel (BLAS); 0: the runtime's default")
    p.add_argument("--tensorflow_inter_op_parallelism", type=int, default=0,
                   help="kernels run at once on the device's pool; 0: the number of cores")
    p.add_argument("--enable_batching", type=_bool, nargs="?", const=True, default=False,
                   help="batch concurrent requests of a signature into one run")
    p.add_argument("--batching_parameters_file", default="",
                   help="BatchingParameters in protobuf text format (TF Serving's)")
    p.add_argument("--rest_api_timeout_in_ms", type=int, default=30000,
                   help="default deadline of a REST request (timeout_ms query parameter "
                        "or X-Request-Timeout-Ms header override it)")
    p.add_argument("--rest_api_server", choices=("native", "aiohttp"), default="native",
                   help="REST server: native (a lean HTTP/1.1 server, the default) or "
                        "aiohttp (the aiohttp app an application can embed)")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the ports (SO_REUSEPORT); each loads the "
                        "models and batches its own requests, metrics are summed over "
                        "them (default 1; docs/serving.md)")
    p.add_argument("--max_request_bytes", type=int, default=64 << 20,
                   help="largest REST request body; larger ones get 413 (default 64 MiB)")
    p.add_argument("--access_log", type=_bool, nargs="?", const=True, default=True,
                   help="JSON access log lines on stderr (default true)")
    p.add_argument("--shutdown_grace_seconds", type=float, default=30.0,
                   help="how long SIGTERM waits for requests in flight (default 30)")
