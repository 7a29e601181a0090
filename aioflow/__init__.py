"""aioflow: a TensorFlow-1-style dataflow graph runtime whose executor is native asyncio.

`import aioflow as af`, build a graph with TF 1.x names (af.placeholder, af.matmul,
af.while_loop, ...), and `await af.Session(graph=g).run(fetches, feed_dict)`.
"""

from aioflow.api import *  # noqa: E402,F403
from aioflow.api import __all__ as _api_all  # noqa: E402
from aioflow.client.session import Session  # noqa: E402
from aioflow.client.sync_session import SyncSession  # noqa: E402
from aioflow.client.timeline import Timeline  # noqa: E402
from aioflow.framework.versions import __version__
from aioflow.ops.script_ops import async_py_func, py_func  # noqa: E402
from aioflow.proto.config_pb2 import (  # noqa: E402
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from aioflow.proto.graph_pb2 import GraphDef  # noqa: E402
from aioflow.train.session_creation import register_session_classes  # noqa: E402

__all__ = list(_api_all) + [
    "Session", "SyncSession", "Timeline", "py_func", "async_py_func", "ConfigProto", "GPUOptions",
    "GraphOptions", "OptimizerOptions", "RunMetadata", "RunOptions", "GraphDef",
    "__version__",
]

register_session_classes(Session, SyncSession)  # af.train's training sessions
