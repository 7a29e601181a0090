"""The Placer: assigns every node a device, honouring requested devices, colocation
groups (`_class: loc:@...`) and which device types have a kernel for the node."""

from __future__ import annotations

from aioflow.framework import device_spec, errors, op_kernel


def place(graph, device_mgr, allow_soft_placement: bool = False) -> None:
    """Set `assigned_device_name` on every op node of `graph`, in place."""
    groups: dict[str, list] = {}
    for node in graph.op_nodes():
        groups.setdefault(_group_of(node), []).append(node)
    for members in groups.values():
        requested = next((n.requested_device for n in members if n.requested_device), "")
        device = _choose(members, requested, device_mgr, allow_soft_placement)
        for node in members:
            node.assigned_device_name = device.name


def _group_of(node) -> str:
    attr = node.attr("_class")
    if attr is not None:
        for s in attr.list.s:
            if s.startswith(b"loc:@"):
                return s[5:].decode()
    return node.name


def _choose(members, requested: str, device_mgr, allow_soft: bool):
    candidates = device_mgr.devices
    if requested:
        try:
            spec = device_spec.DeviceSpec.from_string(requested)
        except ValueError as e:
            node = members[0]
            raise errors.InvalidArgumentError(
                node.def_, None, f"Malformed device specification '{requested}' in node "
                                 f"{{{{node {node.name}}}}}: {e}") from None
        matching = [d for d in candidates
                    if spec.is_compatible_with(device_spec.DeviceSpec.from_string(d.name))]
        if not matching and not allow_soft:
            node = members[0]
            raise errors.InvalidArgumentError(
                node.def_, None,
                f"Cannot assign a device for operation {node.name}: Operation was explicitly "
                f"assigned to {requested} but available devices are [ "
                f"{', '.join(d.name for d in candidates)} ]. Make sure the device "
                f"specification refers to a valid device.")
        candidates = matching or candidates
    for device in candidates:
        if all(op_kernel.find_kernel_class(n.def_, device.device_type) is not None
               for n in members):
            return device
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
