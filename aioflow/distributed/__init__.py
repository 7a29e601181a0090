"""TF 1.x's distributed runtime: ClusterSpec, Server, a master that places a graph over
every task of a cluster and runs it as one RunGraph per task, workers, and the
transports between them (in-process, gRPC with TF's messages, Ray actors).

Importing this package registers the "grpc://" session target with the runtime's
session factory (aioflow.runtime.session_factory): the runtime never imports it."""

from aioflow.distributed import session_target
from aioflow.distributed.cluster_spec import ClusterSpec
from aioflow.distributed.device_setter import (
    GreedyLoadBalancingStrategy,
    byte_size_load_fn,
    replica_device_setter,
)
from aioflow.distributed.ray_engine import RayCluster, ray_cluster
from aioflow.distributed.server import Server
from aioflow.distributed.tf_config import TFConfigClusterResolver

session_target.register()

__all__ = ["ClusterSpec", "Server", "replica_device_setter", "GreedyLoadBalancingStrategy",
           "byte_size_load_fn", "TFConfigClusterResolver", "ray_cluster", "RayCluster"]
