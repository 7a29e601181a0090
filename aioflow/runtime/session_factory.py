"""Session factories by target (TF's SessionFactory registry): the runtime a client
Session talks to. "" (and "local") is the in-process DirectSession; other targets
("grpc://host:port") belong to whichever factory has registered for them: the cluster
runtime (aioflow.distributed) registers itself here when imported, so the runtime never
imports it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aioflow.framework import errors


@dataclass(frozen=True)
class SessionFactory:
    """`accepts(target)`; `new_session(target, config, **options)` returns an object with
    DirectSession's client-facing methods; `reset(target, containers)` is TF's
    Session.reset for that target."""

    name: str
    accepts: Callable[[str], bool]
    new_session: Callable
    reset: Callable


_FACTORIES: list[SessionFactory] = []


def register(factory: SessionFactory) -> None:
    """Add (or replace, by name) a factory."""
    _FACTORIES[:] = [f for f in _FACTORIES if f.name != factory.name]
    _FACTORIES.append(factory)


def is_local(target: str) -> bool:
    return target in ("", "local")


def factory_for(target: str) -> SessionFactory:
    """The factory that accepts `target`; NotFoundError as TF's when none does."""
    for factory in _FACTORIES:
        if factory.accepts(target):
            return factory
    raise errors.NotFoundError(
        None, None, f"No session factory registered for the given session options: "
                    f"{{target: \"{target}\" config: }} Registered factories are "
                    f"{{{', '.join(['DIRECT_SESSION'] + [f.name for f in _FACTORIES])}}}.")
