"""ResourceMgr: per-device resources that outlive runs (TF's resource_mgr.h): variables,
TensorArrays' step containers, queues. Resources live in named containers; a resource is
found by (container, type, name). Kernels on pool threads use it, so it is locked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aioflow.framework import errors

DEFAULT_CONTAINER = "localhost"


class ResourceMgr:
    """Containers of named resources of one device."""

    def __init__(self, default_container: str = DEFAULT_CONTAINER):
        self.default_container = default_container
        self._lock = threading.Lock()
        self._containers: dict[str, dict[tuple[str, str], Any]] = {}

    def _container(self, container: str) -> str:
        return container or self.default_container

    def create(self, container: str, type_name: str, name: str, resource: Any) -> None:
        """Add a resource; AlreadyExistsError when (container, type, name) is taken."""
        with self._lock:
            items = self._containers.setdefault(self._container(container), {})
            if (type_name, name) in items:
                raise errors.AlreadyExistsError(
                    None, None, f"Resource {self._container(container)}/{name}/{type_name} "
                                f"already exists")
            items[(type_name, name)] = resource

    def lookup(self, container: str, type_name: str, name: str) -> Any:
        """The resource; NotFoundError naming it when absent."""
        with self._lock:
            items = self._containers.get(self._container(container), {})
            resource = items.get((type_name, name))
        if resource is None:
            raise errors.NotFoundError(
                None, None, f"Resource {self._container(container)}/{name}/{type_name} does "
                            f"not exist.")
        return resource

    def lookup_or_create(self, container: str, type_name: str, name: str,
                         creator: Callable[[], Any]) -> Any:
        """The resource, created by `creator()` (under the lock) when absent."""
        with self._lock:
            items = self._containers.setdefault(self._container(container), {})
            resource = items.get((type_name, name))
            if resource is None:
                resource = items[(type_name, name)] = creator()
            return resource

    def delete(self, container: str, type_name: str, name: str) -> None:
        """Remove one resource; NotFoundError when absent."""
        with self._lock:
            items = self._containers.get(self._container(container), {})
            if items.pop((type_name, name), None) is None:
                raise errors.NotFoundError(
                    None, None, f"Resource {self._container(container)}/{name}/{type_name} "
                                f"does not exist.")

    def cleanup(self, container: str) -> None:
        """Drop a whole container (Session.reset, the end of a step's container)."""
        with self._lock:
            self._containers.pop(self._container(container), None)

    def clear(self) -> None:
        """Drop every container (the session closes)."""
        with self._lock:
            self._containers.clear()

    def containers(self) -> list[str]:
        with self._lock:
            return sorted(self._containers)
