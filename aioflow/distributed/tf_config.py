"""TF_CONFIG: the environment variable through which launchers tell each process its
cluster and its own task (TF's TFConfigClusterResolver): {"cluster": {"ps": [...],
"worker": [...]}, "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"}."""

from __future__ import annotations

import json
import os

from aioflow.distributed.cluster_spec import ClusterSpec


def _load() -> dict:
    text = os.environ.get("TF_CONFIG")
    return json.loads(text) if text else {}


class TFConfigClusterResolver:
    """The cluster, task and session target TF_CONFIG describes (read at construction;
    `task_type`, `task_id` and `rpc_layer` may be given to override it)."""

    def __init__(self, task_type: str | None = None, task_id: int | None = None,
                 rpc_layer: str | None = None, environment: str | None = None):
        config = _load()
        task = config.get("task", {})
        self._cluster = config.get("cluster", {})
        self.task_type = task_type if task_type is not None else task.get("type")
        self.task_id = task_id if task_id is not None else task.get("index")
        self.rpc_layer = rpc_layer if rpc_layer is not None else config.get("rpc_layer")
        self.environment = environment if environment is not None else config.get(
            "environment", "")

    def cluster_spec(self) -> ClusterSpec:
        """The cluster (an empty ClusterSpec when TF_CONFIG names none)."""
        return ClusterSpec(self._cluster)

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        """The session target of a task (this one by default): "grpc://host:port", or ""
        when TF_CONFIG has no cluster."""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if not self._cluster or task_type is None or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, int(task_id))
        layer = rpc_layer or self.rpc_layer or "grpc"
        return f"{layer}://{address}"
