"""GraphState: a session's full graph, validated and placed, grown by extensions (TF's
GraphExecutionState).

TF rebuilds and re-places the whole graph on every Extend; here only the added nodes are
converted, validated and placed (the groups they join are re-placed as a whole), so a
loop that adds an op and runs it costs what it adds, not the size of the graph. The
checks are construct.py's, in its order and with its messages; an extension that fails
any of them (or placement) is rolled back and leaves the state as it was. When PRE- or
POST_PLACEMENT passes are registered they need the whole graph, and the merged graph is
rebuilt as TF does.

With GraphOptions.place_pruned_graph the graph is not placed here: each step's pruned
graph is placed when its executors are built (DirectSession), as TF's
GraphExecutionState does, so a node no step needs may be unplaceable.

Not thread-safe by itself: the DirectSession holds its lock around `extend` and around
taking a `snapshot`.
"""

from __future__ import annotations

from collections.abc import Sequence

from aioflow.framework import node_def_util, op_def_registry
from aioflow.framework.function_instantiate import is_direct_call
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.graph import construct
from aioflow.graph.algorithm import reverse_reachable
from aioflow.graph.graph import Graph, Node
from aioflow.passes.registry import Grouping, PassOptions, global_registry
from aioflow.proto import graph_pb2, node_def_pb2, versions_pb2
from aioflow.runtime import placer


class GraphState:
    """The full graph of a session, its nodes by name and its colocation groups."""

    def __init__(self, device_mgr, config):
        self.device_mgr = device_mgr
        self.colocation = placer.Colocation(placer.colocates_resource_edges(device_mgr))
        self._merged_keys: list[str] = []  # groups an extension joined into others
        self.config = config
        self.has_versions = False  # an extension has given the graph its versions
        # Placement (and the placement passes) per step, on the pruned graph (TF).
        self.place_pruned_graph = bool(config.graph_options.place_pruned_graph)
        self.graph = Graph()
        self.by_name: dict[str, Node] = {}
        self.groups: dict[str, list[Node]] = {}
        self.node_defs: list[node_def_pb2.NodeDef] = []  # as given, for a full rebuild
        # The session's functions (append-only); the graph and every snapshot share it.
        self.library = FunctionLibraryDefinition()
        self.graph.library = self.library

    # -- extending ----------------------------------------------------------------------
    def add_library(self, library) -> None:
        """Add functions (a FunctionDefLibrary): all or none; InvalidArgumentError when
        one differs from a function of the same name the session has (TF's Extend).
        They stay when the nodes sent with them fail: functions only add names."""
        self.library.add_library(library)

    def extend(self, node_defs: Sequence[node_def_pb2.NodeDef],
               versions: versions_pb2.VersionDef | None, validated: bool = False,
               arg_types: Sequence | None = None) -> None:
        """Add `node_defs` (their names are new to the session); on any error nothing
        changes. `validated`: each NodeDef already passed validate_node_def (they come
        from a Python Graph, which checks every op it creates or imports); then
        `arg_types` may give per NodeDef its (input, output) types (None: computed)."""
        versions = self.merged_versions(versions)
        if global_registry().needs_whole_graph(node_defs):
            self._extend_full(node_defs, versions)
        else:
            self._extend_incremental(node_defs, versions, validated, arg_types)
        self.node_defs.extend(node_defs)
        if versions is not None:
            self.has_versions = True

    def merged_versions(self, versions: versions_pb2.VersionDef | None
                        ) -> versions_pb2.VersionDef | None:
        """The graph's versions once `versions` (an extension's) is merged in, checked
        as TF's GraphExecutionState::Extend and graph constructor check them: the same
        producer as the graph's, the larger min_consumer, the union of bad_consumers,
        and the result readable by this runtime (None: the extension gave none)."""
        from aioflow.framework import errors, graph_def_checks

        if versions is None:
            return None
        merged = versions_pb2.VersionDef()
        if self.has_versions:
            current = self.graph.versions
            if current.producer != versions.producer:
                raise errors.InvalidArgumentError(
                    None, None, f"Can't extend GraphDef at version {current.producer} with "
                                f"graph at version {versions.producer}")
            merged.CopyFrom(current)
            merged.min_consumer = max(current.min_consumer, versions.min_consumer)
            known = set(merged.bad_consumers)
            merged.bad_consumers.extend(v for v in versions.bad_consumers if v not in known)
        else:
            merged.CopyFrom(versions)
        graph_def_checks.check_versions(merged)
        return merged

    def place_step_graph(self, options: PassOptions) -> None:
        """With place_pruned_graph: place a step's pruned graph (`options.graph`), with
        the placement passes, as this state places the whole graph otherwise."""
        _place_with_passes(options, self.device_mgr, self.config)

    def set_versions(self, versions: versions_pb2.VersionDef) -> None:
        """An extension without nodes: only its versions are merged."""
        self.graph.versions.CopyFrom(self.merged_versions(versions))
        self.has_versions = True

    def _extend_full(self, node_defs, versions) -> None:
        """Convert the merged graph and run the placement passes on all of it (TF)."""
        merged = graph_pb2.GraphDef()
        merged.versions.CopyFrom(versions if versions is not None else self.graph.versions)
        merged.node.extend(self.node_defs)
        merged.node.extend(node_defs)
        graph = construct.convert_graph_def_to_graph(merged, self.library)
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.device_mgr)
        if not self.place_pruned_graph:
            _place_with_passes(options, self.device_mgr, self.config)
        self.graph = options.graph
        self.graph.library = self.library
        self.by_name = {n.name: n for n in self.graph.op_nodes()}
        self.groups = {}
        self.colocation = placer.Colocation(self.colocation.resource_edges)
        nodes = list(self.graph.op_nodes())
        if self.colocation.resource_edges:  # (without, no group is joined)
            for node in nodes:
                self.colocation.key(node)
        for node in nodes:
            self.groups.setdefault(self.colocation.find(placer._group_of(node)), []).append(node)

    def _extend_incremental(self, node_defs, versions, validated: bool,
                            arg_types=None) -> None:
        graph = self.graph
        mark = len(graph.nodes)
        new: list[Node] = []
        moved: dict[Node, str] = {}
        parents = dict(self.colocation.parent)
        try:
            self._add_nodes(node_defs, new, validated, arg_types if validated else None)
            for node in new:
                construct._add_input_edges(graph, node, self.by_name)
            cycle = _find_cycle_node(new, mark)
            if cycle is not None:
                raise construct._error(
                    cycle.def_, f"Graph contains a cycle through node '{cycle.name}' that "
                                f"does not pass through a NextIteration node "
                                f"({cycle.type_string})")
            touched = {} if self.place_pruned_graph else self._place(new, moved)
        except BaseException:
            self.colocation.parent = parents
            self._roll_back(mark, new, moved)
            raise
        for key in self._merged_keys:
            self.groups.pop(key, None)
        for key, members in touched.items():
            self.groups[key] = members
        _fix_up_source_and_sink(graph, new, mark)
        if versions is not None:
            graph.versions.CopyFrom(versions)

    def _add_nodes(self, node_defs, new: list[Node], validated: bool,
                   known_types=None) -> None:
        """construct.convert_graph_def_to_graph's per-node checks; each node that passes
        is added (with its name) at once, so later nodes may name it."""
        graph, by_name = self.graph, self.by_name
        get_registration = op_def_registry.get_registration
        arg_types = node_def_util.arg_types
        add_node, append = graph.add_node, new.append
        for i, node_def in enumerate(node_defs):
            name = node_def.name
            if not name:
                raise construct._error(node_def, f"Node with op {node_def.op} has an empty "
                                                 f"name")
            if name in by_name:
                raise construct._error(node_def, f"Node '{name}' is not unique")
            reg = get_registration(node_def.op)
            check = not validated
            if reg is None and is_direct_call(node_def, self.library):
                node_def = construct._as_call(node_def, self.library)
                reg = get_registration(node_def.op)
                check = True  # its attrs are new
            if reg is None:
                raise construct._error(node_def, f"Op type not registered '{node_def.op}' in "
                                                 f"binary running aioflow. (node "
                                                 f"{name})")
            op_def = reg.op_def
            if check:  # (a validated NodeDef carries its defaults already)
                node_def = construct._with_defaults(node_def, op_def)
                node_def_util.validate_node_def(node_def, op_def)
            types = known_types[i] if known_types is not None and not check else None
            if types is None:
                types = arg_types(node_def, op_def)
            node = add_node(node_def, op_def, *types)
            by_name[name] = node
            append(node)

    def _place(self, new: list[Node], moved: dict[Node, str]) -> dict[str, list[Node]]:
        """Place the groups the new nodes join, each as a whole (members already placed
        may move, as TF's re-placement would move them); returns them by key. `moved`
        records the previous device of every existing member that was assigned again."""
        touched: dict[str, list[Node]] = {}
        groups = self.groups
        joined = False  # a new node joins a group placed before: order groups by age
        colocation = self.colocation
        unions = len(colocation.parent)
        for node in new:
            colocation.key(node)  # (joins groups through resource and ref edges)
        self._merged_keys = [] if len(colocation.parent) == unions else [
            k for k in groups if colocation.find(k) != k]
        for old_key in self._merged_keys:  # groups placed before, now one: placed again
            root = colocation.find(old_key)
            members = touched.get(root) or list(groups.get(root, ()))
            touched[root] = sorted([*members, *groups[old_key]], key=lambda n: n.id)
            joined = True
        for node in new:
            key = colocation.find(placer._group_of(node))
            members = touched.get(key)
            if members is not None:
                members.append(node)
                continue
            old = groups.get(key)
            touched[key] = [*old, node] if old else [node]
            joined = joined or bool(old)
        # TF places the whole graph again: a generator or an Identity placed before whose
        # consumers changed may move with them (the placer's heuristics).
        for key in _placed_sources_of(new, groups, touched, colocation):
            touched[key] = groups[key]
            joined = True
        allow_soft = self.config.allow_soft_placement
        keys = sorted(touched, key=lambda k: touched[k][0].id) if joined else touched
        first_new = new[0].id if new else 0
        for key, members in placer.placement_order({k: touched[k] for k in keys}):
            device_name = placer.choose_device(key, members, self.device_mgr, allow_soft,
                                               placer.preferred_device(members)).name
            for node in members:
                if node.id < first_new and node not in moved:
                    moved[node] = node.assigned_device_name
                node.assigned_device_name = device_name
        if self.config.log_device_placement:
            log_device_placement(n for members in touched.values() for n in members)
        return touched

    def _roll_back(self, mark: int, new: list[Node], moved: dict[Node, str]) -> None:
        """Undo a failed extension: the new nodes and their edges, names, placements."""
        for node, device in moved.items():
            node.assigned_device_name = device
        for node in reversed(new):
            self.graph.remove_node(node)
            del self.by_name[node.name]
        del self.graph.nodes[mark:]

    # -- reading ------------------------------------------------------------------------
    def snapshot(self, names: Sequence[str]) -> Graph:
        """A copy of the part of the graph the nodes in `names` (feeds, fetches, targets)
        depend on (the rewrite prunes the rest anyway), all of it when a name is unknown
        (the rewrite reports it). Ids keep their order; NodeDefs are shared (never
        mutated in place). Nodes that lose consumers get their sink edges in the prune."""
        roots = []
        for name in names:
            node = self.by_name.get(node_def_util.parse_input(name)[0])
            if node is None:
                return _copy(self.graph, None)
            roots.append(node)
        return _copy(self.graph, reverse_reachable(roots))


def log_device_placement(nodes) -> None:
    """What ConfigProto.log_device_placement prints, as TF's Placer: one line per node,
    "name: (op): device", on stdout."""
    lines = [f"{n.name}: ({n.type_string}): {n.assigned_device_name}" for n in nodes]
    if lines:
        print("\n".join(lines), flush=True)


def _placed_sources_of(new: list[Node], groups: dict, touched: dict,
                       colocation: placer.Colocation) -> list[str]:
    """The groups placed before that feed a new node and whose device the placer's
    heuristics tie to their consumers: generators and Identity nodes."""
    keys = []
    first_new = new[0].id if new else 0
    for node in new:
        for edge in node.in_edges:
            src = edge.src
            if src.id >= first_new or not src.is_op:
                continue
            if not (placer._is_generator(src) or src.type_string in placer._IDENTITY_OPS):
                continue
            key = colocation.find(placer._group_of(src))
            if key not in touched and key not in keys and key in groups:
                keys.append(key)
    return keys


def _place_with_passes(options: PassOptions, device_mgr, config) -> None:
    """PRE_PLACEMENT passes, the Placer, POST_PLACEMENT passes on `options.graph`."""
    global_registry().run_grouping(Grouping.PRE_PLACEMENT, options)
    placer.place(options.graph, device_mgr, config.allow_soft_placement)
    global_registry().run_grouping(Grouping.POST_PLACEMENT, options)


def _find_cycle_node(new: list[Node], first_id: int) -> Node | None:
    """construct's cycle check on the new nodes only: edges into existing nodes never
    come from new ones, so a cycle of the grown graph runs through new nodes alone."""
    if all(e.src.id < node.id for node in new for e in node.in_edges):
        return None  # every node comes after its inputs (as most graphs are written)
    pending = {}
    for node in new:
        pending[node.id] = sum(1 for e in node.in_edges
                               if e.src.id >= first_id and not e.src.is_next_iteration)
    ready = [n for n in new if pending[n.id] == 0]
    while ready:
        node = ready.pop()
        if node.is_next_iteration:
            continue
        for e in node.out_edges:
            pending[e.dst.id] -= 1
            if pending[e.dst.id] == 0:
                ready.append(e.dst)
    stuck = [n for n in new if pending[n.id] > 0]
    return min(stuck, key=lambda n: n.name) if stuck else None


def _fix_up_source_and_sink(graph: Graph, new: list[Node], first_id: int) -> None:
    """fixup_source_and_sink_edges for the grown graph: the new nodes get their source
    and sink edges; an existing node that gained a consumer loses its sink edge (a
    conversion of the whole graph would not have given it one)."""
    source, sink = graph.source_node, graph.sink_node
    for node in new:
        if not node.in_edges:
            graph.add_control_edge(source, node, allow_duplicates=True)
        for e in node.in_edges:
            src = e.src
            if src.id < first_id and src.is_op:
                _drop_sink_edge(graph, src, sink)
    for node in new:
        if not node.out_edges:
            graph.add_control_edge(node, sink, allow_duplicates=True)


def _drop_sink_edge(graph: Graph, node: Node, sink: Node) -> None:
    outs = node.out_edges
    # A fix-up edge is given to a node without out-edges, so it is the node's first.
    if len(outs) > 1 and outs[0].dst is sink:
        graph.remove_edge(outs[0])


def _copy(src: Graph, keep: set[int] | None) -> Graph:
    """copy_graph of the op nodes whose ids are in `keep` (all when None), in time
    proportional to what is kept."""
    dst = Graph(src.versions)
    dst.library = src.library
    for e in list(dst.source_node.out_edges):
        dst.remove_edge(e)
    if keep is None:
        nodes = list(src.op_nodes())
    else:
        nodes = [src.nodes[i] for i in sorted(keep) if i > 1]
    mapping: list[Node | None] = [None] * len(src.nodes)  # by the source's ids
    mapping[0], mapping[1] = dst.source_node, dst.sink_node
    add_node = dst.add_node
    for node in nodes:
        copy = add_node(node.def_, node.op_def, node.input_types, node.output_types)
        copy.assigned_device_name = node.assigned_device_name
        mapping[node.id] = copy
    add_edge = dst.add_edge
    for node in [src.source_node, src.sink_node] + nodes:
        src_copy = mapping[node.id]
        for e in node.out_edges:
            dst_copy = mapping[e.dst.id]
            if dst_copy is not None:
                add_edge(src_copy, e.src_output, dst_copy, e.dst_input)
    return dst
