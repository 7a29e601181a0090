"""How the training sessions make a Session without importing the client (builders never
import it): the client registers its session classes here when aioflow is imported."""

from __future__ import annotations

_classes: dict = {}


def register_session_classes(awaitable, blocking) -> None:
    """The awaitable Session class and its blocking facade (aioflow/__init__.py)."""
    _classes["awaitable"] = awaitable
    _classes["blocking"] = blocking


def new_session(blocking: bool, target: str = "", graph=None, config=None):
    """A new Session (a blocking SyncSession when `blocking`) on `graph`."""
    if not _classes:
        raise RuntimeError("No session classes registered: import aioflow first.")
    cls = _classes["blocking" if blocking else "awaitable"]
    return cls(target, graph=graph, config=config)


def is_blocking(session) -> bool:
    cls = _classes.get("blocking")
    return cls is not None and isinstance(session, cls)
