"""The optimization pass registry: passes grouped by where they run on the path
(PRE_PLACEMENT, POST_PLACEMENT, POST_REWRITE_FOR_EXEC, POST_PARTITIONING), ordered by
phase within a grouping, as TensorFlow's OptimizationPassRegistry."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field


class Grouping(enum.Enum):
    PRE_PLACEMENT = 0
    POST_PLACEMENT = 1
    POST_REWRITE_FOR_EXEC = 2
    POST_PARTITIONING = 3


@dataclass
class PassOptions:
    """What a pass sees: the graph (or partitions), the session's config and devices."""

    graph: object = None
    partition_graphs: dict = field(default_factory=dict)
    config: object = None
    device_mgr: object = None


Pass = Callable[[PassOptions], None]


class OptimizationPassRegistry:
    """Passes by grouping and phase; `run_grouping` runs them in phase order."""

    def __init__(self):
        self._passes: dict[Grouping, dict[int, list[tuple[str, Pass]]]] = {g: {} for g in Grouping}

    def register(self, grouping: Grouping, phase: int, name: str, fn: Pass) -> None:
        self._passes[grouping].setdefault(phase, []).append((name, fn))

    def unregister(self, grouping: Grouping, name: str) -> None:
        for phase in self._passes[grouping].values():
            phase[:] = [(n, f) for n, f in phase if n != name]

    def passes(self, grouping: Grouping) -> list[tuple[str, Pass]]:
        out = []
        for phase in sorted(self._passes[grouping]):
            out.extend(self._passes[grouping][phase])
        return out

    def run_grouping(self, grouping: Grouping, options: PassOptions) -> None:
        for _name, fn in self.passes(grouping):
            fn(options)


_global = OptimizationPassRegistry()


def global_registry() -> OptimizationPassRegistry:
    return _global


def register_optimization(grouping: Grouping, phase: int, name: str | None = None):
    """Decorator: register a pass function in the global registry."""

    def wrap(fn: Pass) -> Pass:
        _global.register(grouping, phase, name or fn.__name__, fn)
        return fn

    return wrap
