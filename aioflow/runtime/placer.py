"""The Placer: assigns every node a device, honouring requested devices, colocation
groups (`_class: loc:@...`) and which device types have a kernel for the node. Devices
are tried in priority order (a GPU before a CPU, as TF's DeviceSet::PrioritizedDevices):
a node without a request goes to a GPU when its op has a GPU kernel; a node asking
for a device without a kernel for it goes elsewhere only with soft placement."""

from __future__ import annotations

from aioflow.framework import device_spec, errors, op_kernel


def place(graph, device_mgr, allow_soft_placement: bool = False) -> None:
    """Set `assigned_device_name` on every op node of `graph`, in place. A group with
    a member assigned already goes where that member is (TF's Placer keeps assigned
    devices)."""
    groups: dict[str, list] = {}
    colocation = Colocation(colocates_resource_edges(device_mgr))
    nodes = list(graph.op_nodes())
    if colocation.resource_edges:  # (without, no group is joined: nothing to walk)
        for node in nodes:
            colocation.key(node)
    for node in nodes:
        groups.setdefault(colocation.find(_group_of(node)), []).append(node)
    for key, members in placement_order(groups):
        assigned = next((n.assigned_device_name for n in members if n.assigned_device_name),
                        None)
        if assigned:  # placed already (a stateful node kept where an earlier step put it)
            device = device_mgr.lookup(assigned)
        else:
            device = choose_device(key, members, device_mgr, allow_soft_placement,
                                   preferred_device(members))
        for node in members:
            node.assigned_device_name = device.name


def placement_order(groups: dict) -> list:
    """The groups (key, members) in the order TF's Placer assigns them: node order, but
    groups made only of generators (no inputs, one non-ref output: a Const) in a second
    pass, after their consumers (so the first error is a consumer's, as TF's)."""
    first, second = [], []
    for key, members in groups.items():
        generators = (_is_generator(members[0]) if len(members) == 1
                      else all(_is_generator(n) for n in members))
        (second if generators else first).append((key, members))
    return first + second


def _is_generator(node) -> bool:
    outputs = node.output_types
    return (not node.input_types and len(outputs) == 1
            and outputs[0] < 100)  # a ref type's enum is its base's + 100


# TF's NC_METADATA and NC_IDENTITY node classes (graph.cc).
_METADATA_OPS = frozenset({"Shape", "Size", "Rank"})
_IDENTITY_OPS = frozenset({"Identity", "RefIdentity"})


def preferred_device(members) -> str:
    """The device TF's Placer heuristics would give the group, if it can run there ("" for
    none), decided by the member TF places first. Heuristic A: generators (placed last)
    go with their consumers when those all share one device. Heuristic B: a metadata op
    (Shape, Size, Rank), or an unrequested Identity with one input and one consumer
    that request the same device, goes with its input, if that is placed already."""
    first = next((n for n in members if not _is_generator(n)), None)
    if first is None:
        consumers = [e.dst for e in members[0].out_edges if not e.dst.is_sink]
        if not consumers:
            return ""
        device = consumers[0].assigned_device_name
        return device if all(c.assigned_device_name == device for c in consumers) else ""
    op = first.type_string
    if op in _METADATA_OPS or (op in _IDENTITY_OPS and _matches_identity(first)):
        return first.in_edges[0].src.assigned_device_name if first.in_edges else ""
    return ""


def _matches_identity(node) -> bool:
    """TF's MatchIdentityOperation: no requested device, one in-edge, one out-edge (the
    sink's when there is no consumer), and both ends request the same device."""
    if node.requested_device or len(node.in_edges) != 1:
        return False
    outs = [e for e in node.out_edges if not e.dst.is_sink]
    if len(outs) > 1:
        return False
    consumer_request = outs[0].dst.requested_device if outs else ""
    return node.in_edges[0].src.requested_device == consumer_request


def _group_of(node) -> str:
    """The node's own colocation key: its `_class: loc:@` group, else its name."""
    node_def = node.def_
    attrs = node_def.attr
    if "_class" in attrs:
        for s in attrs["_class"].list.s:
            if s.startswith(b"loc:@"):
                return s[5:].decode(errors="surrogateescape")  # (any bytes: a group)
    return node_def.name


class Colocation:
    """Colocation groups as a union-find over group keys: a node's `_class` group or
    name, joined (with `resource_edges`) to the groups of the nodes whose resource or
    ref outputs it reads, as TF's ColocationGraph joins them."""

    def __init__(self, resource_edges: bool):
        self.resource_edges = resource_edges
        self.parent: dict[str, str] = {}  # non-root key -> a key nearer its root

    def find(self, key: str) -> str:
        parent = self.parent
        root = key
        while root in parent:
            root = parent[root]
        while key != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    def key(self, node, _visiting: set | None = None) -> str:
        """The root key of the node's group, after joining it to its resource sources."""
        root = self.find(_group_of(node))
        if not self.resource_edges:
            return root
        visiting = _visiting if _visiting is not None else set()
        visiting.add(node.id)
        types = node.input_types
        for e in node.in_edges:
            src = e.src
            if e.dst_input < 0 or not src.is_op or src.id in visiting:
                continue
            t = types[e.dst_input]
            if t == _DT_RESOURCE or t > _REF:
                other = self.key(src, visiting)
                root = self.find(root)
                if other != root:
                    self.parent[root] = other
                    root = other
        return self.find(root)


_DT_RESOURCE = 20
_REF = 100  # a ref type's enum is its base's + 100


def colocates_resource_edges(device_mgr) -> bool:
    """Whether a node reading a resource or a ref goes where its producer goes (TF's
    ColocationGraph::ColocateResourceAndRefEdges). Applied where a session has an
    accelerator, so that a variable, its readers and updaters, and a function call
    taking its handle (whose body runs on the call's device) share one device, and where
    the devices belong to several tasks of a cluster (a queue's enqueue on its queue's
    task); on the CPUs of one process alone, placement stays as it was."""
    devices = device_mgr.devices
    return (any(d.device_type != "CPU" for d in devices)
            or len({d.name[:d.name.find("/device:")] for d in devices}) > 1)


_FIELDS = (("job", "jobs"), ("replica", "replicas"), ("task", "tasks"),
           ("device_type", "types"), ("device_index", "ids"))


def merged_request(key: str, members, allow_soft: bool) -> str:
    """The device a colocation group asks for: its members' requested devices merged
    as TF's ColocationGraph merges them (DeviceNameUtils::MergeDevNames), in node order.
    Members asking for different jobs, replicas or tasks cannot be colocated
    (InvalidArgumentError in TF's words); different types or ids neither, unless soft
    placement is allowed, which then drops the type and id (or the id) from the
    group's request."""
    merged = None
    followers = _resource_followers(members)
    for node in members:
        requested = node.requested_device
        if not requested or node in followers:
            continue
        spec = _parse(node, requested)
        if merged is None:
            merged = spec
            continue
        fields = dict(merged.__dict__)
        for name, plural in _FIELDS:
            mine, theirs = fields[name], getattr(spec, name)
            if theirs is None:
                continue
            if mine is None or mine == theirs:
                fields[name] = theirs
                continue
            if allow_soft and name == "device_type":
                fields["device_type"] = fields["device_index"] = None
                break
            if allow_soft and name == "device_index":
                fields["device_index"] = None
                break
            raise errors.InvalidArgumentError(
                node.def_, None,
                f"Cannot colocate nodes {{{{colocation_node {node.name}}}}} and "
                f"{{{{colocation_node {key}}}}}: Cannot merge devices with incompatible "
                f"{plural}: '{merged.to_string()}' and '{spec.to_string()}'")
        merged = device_spec.DeviceSpec(**fields)
    for node in followers:  # TF: "Ignoring device specification ... reference connection"
        if node.requested_device:
            spec = _parse(node, node.requested_device)
            if merged is None:
                merged = spec
            elif merged.is_compatible_with(spec):
                merged = merged.make_merged_spec(spec)
    return merged.to_string() if merged is not None else ""


def _resource_followers(members) -> set:
    """The members that joined the group by reading a resource or ref another member
    makes (not by `_class`): where their own request disagrees with the group's, TF's
    EnsureCompatibilityAcrossResourceEdge ignores it (the state cannot move)."""
    if len(members) < 2:
        return set()
    ids = {n.id for n in members}
    followers = set()
    for node in members:
        attrs = node.def_.attr
        if "_class" in attrs and any(c.startswith(b"loc:@") for c in attrs["_class"].list.s):
            continue
        types = node.input_types
        if any(e.dst_input >= 0 and e.src.id in ids and e.src.is_op
               and (types[e.dst_input] == _DT_RESOURCE or types[e.dst_input] > _REF)
               for e in node.in_edges):
            followers.add(node)
    return followers


def _parse(node, requested: str):
    try:
        return device_spec.DeviceSpec.from_string(requested)
    except ValueError as e:
        raise errors.InvalidArgumentError(
            node.def_, None, f"Malformed device specification '{requested}' in node "
                             f"{{{{node {node.name}}}}}: {e}") from None


def choose_device(key: str, members, device_mgr, allow_soft: bool, preferred: str = ""):
    """The device of the colocation group `key`: its members' merged request, then the
    `preferred` device if it fits, else the first device (in the manager's order) with
    a kernel for every member."""
    if len(members) == 1:  # the common case, without the merge: one node, no request
        node = members[0]
        if not node.requested_device:
            node_def = node.def_
            devices = _prioritized(device_mgr)
            device = _named(device_mgr, preferred)
            if device is not None:
                devices = [device, *devices]
            for device in devices:
                if op_kernel.find_kernel_class(node_def, device.device_type) is not None:
                    return device
            # (no kernel anywhere: _choose below words the error)
    requested = merged_request(key, members, allow_soft)
    return _choose(members, requested, device_mgr, allow_soft, preferred)


def _prioritized(device_mgr) -> list:
    """The manager's devices in placement order (GPU first)."""
    return getattr(device_mgr, "prioritized", device_mgr.devices)


def _named(device_mgr, name: str):
    """The manager's device of that full name, or None (also for "")."""
    return device_mgr._by_name.get(name) if name else None


def _choose(members, requested: str, device_mgr, allow_soft: bool, preferred: str = ""):
    candidates = _prioritized(device_mgr)
    narrowed = False  # to the devices matching the request
    if requested:
        node = next((n for n in members if n.requested_device), members[0])
        spec = _parse(node, requested)
        matching = [d for d in candidates
                    if spec.is_compatible_with(device_spec.DeviceSpec.from_string(d.name))]
        if not matching and allow_soft:  # any device of the job, replica and task (TF)
            loose = device_spec.DeviceSpec(spec.job, spec.replica, spec.task)
            matching = [d for d in candidates
                        if loose.is_compatible_with(device_spec.DeviceSpec.from_string(d.name))]
        if not matching:
            gpu = (" The requested device appears to be a GPU, but CUDA is not enabled."
                   if spec.device_type == "GPU" else "")
            raise errors.InvalidArgumentError(
                node.def_, None,
                f"Cannot assign a device for operation {node.name}: {{{{node {node.name}}}}} "
                f"was explicitly assigned to {node.requested_device} but available devices "
                f"are [ {', '.join(d.name for d in device_mgr.devices)} ]. Make sure the device "
                f"specification refers to a valid device.{gpu}")
        candidates = matching or candidates
        narrowed = bool(matching)
    device = _named(device_mgr, preferred)
    if device is not None and device in candidates:
        candidates = [device, *candidates]
    for device in candidates:
        if all(op_kernel.find_kernel_class(n.def_, device.device_type) is not None
               for n in members):
            return device
    if narrowed:
        if allow_soft:  # the requested device type has no kernel: anywhere that has one
            for device in _prioritized(device_mgr):
                if all(op_kernel.find_kernel_class(n.def_, device.device_type) is not None
                       for n in members):
                    return device
        elif any(op_kernel.find_kernel_class(n.def_, d.device_type) is not None
                 for n in members for d in device_mgr.devices):
            node = next(n for n in members if n.requested_device)
            kind = candidates[0].device_type
            raise errors.InvalidArgumentError(
                node.def_, None,
                f"Cannot assign a device for operation {node.name}: Could not satisfy "
                f"explicit device specification '{node.requested_device}' because no "
                f"supported kernel for {kind} devices is available.")
    node = next(n for n in members
                if op_kernel.find_kernel_class(n.def_, candidates[0].device_type) is None)
    raise errors.InvalidArgumentError(
        node.def_, None,
        f"No OpKernel was registered to support Op '{node.type_string}' used by "
        f"{{{{node {node.name}}}}} with these attrs: [{_type_attrs(node)}]\n"
        f"Registered devices: [{', '.join(sorted({d.device_type for d in device_mgr.devices}))}]"
        f"\nRegistered kernels:\n  {op_kernel.registered_summary(node.type_string)}")


def _type_attrs(node) -> str:
    parts = []
    for k in sorted(node.def_.attr):
        v = node.def_.attr[k]
        if v.WhichOneof("value") == "type":
            from aioflow.framework import dtypes

            parts.append(f"{k}=DT_{dtypes.as_dtype(v.type).name.upper()}")
    return ", ".join(parts)
