"""The optimization pass registry: passes grouped by where they run on the path
(PRE_PLACEMENT, POST_PLACEMENT, POST_REWRITE_FOR_EXEC, POST_PARTITIONING), ordered by
phase within a grouping, as TensorFlow's OptimizationPassRegistry."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aioflow.passes import graph_dump


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
#: Says whether a pass could change a graph holding these NodeDefs (the new ones of an
#: extension); a placement pass without one always runs on the whole graph.
Applies = Callable[[Sequence], bool]


class OptimizationPassRegistry:
    """Passes by grouping and phase; `run_grouping` runs them in phase order."""

    def __init__(self):
        self._passes: dict[Grouping, dict[int, list[tuple[str, Pass]]]] = {g: {} for g in Grouping}
        self._applies: dict[str, Applies] = {}

    def register(self, grouping: Grouping, phase: int, name: str, fn: Pass,
                 applies: Applies | None = None) -> None:
        """Add `fn` at `phase` of `grouping`; `applies` (optional) lets the session skip
        a placement pass, and the whole-graph rebuild it needs, for extensions it cannot
        change."""
        self._passes[grouping].setdefault(phase, []).append((name, fn))
        if applies is not None:
            self._applies[name] = applies

    def unregister(self, grouping: Grouping, name: str) -> None:
        for phase in self._passes[grouping].values():
            phase[:] = [(n, f) for n, f in phase if n != name]
        self._applies.pop(name, None)

    def passes(self, grouping: Grouping) -> list[tuple[str, Pass]]:
        out = []
        for phase in sorted(self._passes[grouping]):
            out.extend(self._passes[grouping][phase])
        return out

    def needs_whole_graph(self, node_defs: Sequence) -> bool:
        """Whether extending a session with `node_defs` must convert the whole graph and
        run the placement groupings on it (TF always does; aioflow skips that when no
        placement pass applies to the new nodes and graphs are not being dumped)."""
        if graph_dump.enabled():
            return True
        for grouping in (Grouping.PRE_PLACEMENT, Grouping.POST_PLACEMENT):
            for name, _fn in self.passes(grouping):
                applies = self._applies.get(name)
                if applies is None or applies(node_defs):
                    return True
        return False

    def run_grouping(self, grouping: Grouping, options: PassOptions) -> None:
        """Run the grouping's passes in phase order, then dump the graph (or each
        partition) when AIOFLOW_DUMP_GRAPH_PREFIX asks for it."""
        for _name, fn in self.passes(grouping):
            fn(options)
        if graph_dump.enabled():
            graph_dump.dump_grouping(grouping.name.lower(), options)


_global = OptimizationPassRegistry()


def global_registry() -> OptimizationPassRegistry:
    return _global


def register_optimization(grouping: Grouping, phase: int, name: str | None = None,
                          applies: Applies | None = None):
    """Decorator: register a pass function in the global registry."""

    def wrap(fn: Pass) -> Pass:
        _global.register(grouping, phase, name or fn.__name__, fn, applies)
        return fn

    return wrap

