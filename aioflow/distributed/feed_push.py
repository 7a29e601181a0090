"""Feeds sent with the RunGraph of the task that uses them (a master's rewrite after
partitioning; one RecvTensor call less per such feed and step).

A feed arrives on the client's device (a client-terminated _Recv, TF's), and an edge
from it to a node of another task is cut into a _Send on the client's partition and a
_Recv on the other task's, which pulls the value with a RecvTensor call once the step
runs there. But the master knows a feed's value before the step starts: it can put it
into that task's RunGraphRequest.send (TF's field for tensors sent into a partition)
instead. The other task's _Recv then names its own device as the sender (its rendezvous
finds the value locally) and the client's _Send goes. The feed's own _Recv stays (it
takes the value sent to the client's task, as before). Only a _Send whose input is the
feed's _Recv itself is rewritten: such a transfer is in no loop frame."""

from __future__ import annotations

from aioflow.framework.rendezvous_key import create_key


def _text(node, name: str) -> str:
    return node.def_.attr[name].s.decode()


def push_feeds(parts: dict, client_task: str, task_of, incarnation_of, feeds) -> dict:
    """Rewrite `parts` ({task: {device: Graph}}) in place for the feeds (tensor names,
    "node:slot") in `feeds`; {task: {feed tensor name: rendezvous key}}: what the master
    sends with each task's RunGraph."""
    recvs = {}  # (device, tensor_name) -> (task, Graph, the _Recv)
    for task, devices in parts.items():
        if task == client_task:
            continue
        for device, graph in devices.items():
            for node in graph.op_nodes():
                if node.type_string == "_Recv" and not node.def_.attr["client_terminated"].b:
                    recvs[(device, _text(node, "tensor_name"))] = (task, graph, node)
    pushed: dict[str, dict[str, str]] = {}
    for graph in parts.get(client_task, {}).values():
        for send in [n for n in graph.op_nodes() if n.type_string == "_Send"]:
            feed = next((e.src for e in send.in_edges if not e.is_control_edge), None)
            if (feed is None or feed.type_string != "_Recv"
                    or not feed.def_.attr["client_terminated"].b
                    or _text(feed, "tensor_name") not in feeds
                    or any(e.is_control_edge for e in send.in_edges)):
                continue
            device = _text(send, "recv_device")
            found = recvs.get((device, _text(send, "tensor_name")))
            if found is None or task_of(device) == client_task:
                continue
            task, _, recv = found
            incarnation = incarnation_of(device)
            recv.def_.attr["send_device"].s = device.encode()
            recv.def_.attr["send_device_incarnation"].i = incarnation
            key = create_key(device, incarnation, device, _text(recv, "tensor_name"))
            pushed.setdefault(task, {})[_text(feed, "tensor_name")] = key
            graph.remove_node(send)
    return pushed
