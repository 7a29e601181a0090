"""The cluster's session factory (registered with aioflow.runtime.session_factory when
aioflow.distributed is imported): "grpc://host:port" targets open a ClusterSession on
that task's master, through the server of this process at that address when there is
one (LocalMaster), else over gRPC."""

from __future__ import annotations

from aioflow.distributed.cluster_session import ClusterSession
from aioflow.distributed.master_client import LocalMaster
from aioflow.distributed.server import local_server
from aioflow.runtime import session_factory

PREFIX = "grpc://"


def accepts(target: str) -> bool:
    return target.startswith(PREFIX)


def master_for(target: str):
    """The MasterClient of a target."""
    address = target[len(PREFIX):]
    server = local_server(address)
    if server is not None:
        return LocalMaster(server)
    from aioflow.distributed import grpc_transport  # grpcio: an optional extra

    return grpc_transport.GrpcMasterClient(address)


def new_session(target: str, config, **_options) -> ClusterSession:
    return ClusterSession(target, config, master_for(target))


def reset(target: str, containers, config=None) -> None:
    master_for(target).reset_blocking(containers)


def register() -> None:
    session_factory.register(session_factory.SessionFactory(
        "GRPC_SESSION", accepts, new_session, reset))
