"""Checks of a whole GraphDef that TF's graph constructor makes before it builds a node:
versions, node names and input lists, inputs naming missing nodes, and cycles outside
while loops (InvalidArgumentError, TF's words). import_graph_def makes them all; the
runtime's GraphDef -> Graph construction (graph/construct.py) shares the version check and
makes the others node by node, through node_def_util, in the order its incremental extend
repeats."""

from __future__ import annotations

from aioflow.framework import errors, node_def_util
from aioflow.framework.versions import __version__

# TF_GRAPH_DEF_VERSION_MIN_PRODUCER: the oldest GraphDef producer still read.
GRAPH_DEF_VERSION_MIN_PRODUCER = 0

_MERGE_OPS = frozenset({"Merge", "RefMerge"})
_NEXT_ITERATION_OPS = frozenset({"NextIteration", "RefNextIteration"})
# A cycle error names this many of the nodes it leaves unordered (TF names none).
_MAX_NAMED = 5


def check_versions(versions) -> None:
    """TF's CheckVersions of a GraphDef against this runtime's producer version."""
    from aioflow.framework.ops import GRAPH_DEF_VERSION

    if versions.producer < GRAPH_DEF_VERSION_MIN_PRODUCER:
        raise errors.InvalidArgumentError(
            None, None, f"GraphDef producer version {versions.producer} below min producer "
                        f"{GRAPH_DEF_VERSION_MIN_PRODUCER} supported by aioflow {__version__}."
                        f"  Please regenerate your graph.")
    if versions.min_consumer > GRAPH_DEF_VERSION:
        raise errors.InvalidArgumentError(
            None, None, f"GraphDef min consumer version {versions.min_consumer} above current "
                        f"version {GRAPH_DEF_VERSION} for aioflow {__version__}.  Please "
                        f"upgrade aioflow.")
    if GRAPH_DEF_VERSION in versions.bad_consumers:
        raise errors.InvalidArgumentError(
            None, None, f"GraphDef disallows consumer version {GRAPH_DEF_VERSION}.  Please "
                        f"upgrade aioflow: this version is likely buggy.")


def index_nodes(node_defs, allow_internal_ops: bool) -> dict:
    """The nodes by name (TF's BuildNodeIndex): each name valid and unique, each node's
    control inputs after its data inputs."""
    by_name: dict = {}
    for node_def in node_defs:
        node_def_util.check_node_name(node_def, allow_internal_ops)
        if node_def.name in by_name:
            raise errors.InvalidArgumentError(node_def, None,
                                              f"Node '{node_def.name}' is not unique")
        node_def_util.check_input_order(node_def)
        by_name[node_def.name] = node_def
    return by_name


def check_edges(node_defs, mapped=frozenset()) -> None:
    """Every input names a node of the GraphDef (or a key of `mapped`, a set of
    (name, index) pairs with index -1 for control inputs), and the nodes can be ordered so
    that each comes after its inputs, except that a Merge fed by a NextIteration waits for
    only one data input (TF's InitFromEdges): "N nodes in a cycle" otherwise, and (unlike
    TF) the first few of them by name."""
    position = {node_def.name: n for n, node_def in enumerate(node_defs)}
    if _inputs_come_first(node_defs, position, mapped):
        return  # (no cycle: every node comes after its inputs)
    next_iterations = {nd.name for nd in node_defs if nd.op in _NEXT_ITERATION_OPS}
    consumers: list[list[int]] = [[] for _ in node_defs]
    pending: list[int] = []
    parse_input = node_def_util.parse_input
    for n, node_def in enumerate(node_defs):
        texts = node_def.input
        parsed = [parse_input(text) if ":" in text or text.startswith("^") else (text, 0)
                  for text in texts]
        count = len(parsed)
        back_edge = node_def.op in _MERGE_OPS and any(
            index >= 0 and name in next_iterations for name, index in parsed)
        if back_edge:
            count = sum(1 for _, index in parsed if index < 0) + 1
        for text, (name, index) in zip(texts, parsed, strict=True):
            if (name, index) in mapped:
                count -= 1
                continue
            src = position.get(name)
            if src is None:
                raise errors.InvalidArgumentError(
                    node_def, None, f"Node '{node_def.name}': Unknown input node '{text}'")
            if not (back_edge and name in next_iterations):
                consumers[src].append(n)
        pending.append(count)
    _order(pending, consumers)
    stuck = sorted((node_defs[n].name, n) for n, count in enumerate(pending) if count > 0)
    if stuck:
        names = ", ".join(f"'{name}'" for name, _ in stuck[:_MAX_NAMED])
        more = ", ..." if len(stuck) > _MAX_NAMED else ""
        raise errors.InvalidArgumentError(
            node_defs[stuck[0][1]], None, f"{len(stuck)} nodes in a cycle: {names}{more}")


def _inputs_come_first(node_defs, position: dict, mapped) -> bool:
    """Every input names a node of the GraphDef or a key of `mapped` (else TF's "Unknown
    input node", for the first such input in node order); whether each such node comes
    before its consumer (then there is no cycle: most GraphDefs are written so)."""
    parse_input = node_def_util.parse_input
    ordered = True
    for n, node_def in enumerate(node_defs):
        for text in node_def.input:
            if ":" in text or text.startswith("^"):
                key = parse_input(text)
            else:  # (the common case, without a call)
                key = (text, 0)
            if mapped and key in mapped:
                continue
            src = position.get(key[0])
            if src is None:
                raise errors.InvalidArgumentError(
                    node_def, None, f"Node '{node_def.name}': Unknown input node '{text}'")
            if src >= n:
                ordered = False
    return ordered


def _order(pending: list[int], consumers: list[list[int]]) -> None:
    """Kahn's algorithm from the nodes with nothing pending; what stays pending is the
    nodes on or after a cycle."""
    ready = [n for n, count in enumerate(pending) if count <= 0]
    while ready:
        n = ready.pop()
        pending[n] = 0
        for m in consumers[n]:
            if pending[m] > 0:
                pending[m] -= 1
                if pending[m] == 0:
                    ready.append(m)
