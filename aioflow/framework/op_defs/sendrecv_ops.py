"""OpDefs of the transfer ops the partitioner puts on edges that cross devices."""

from aioflow.framework import common_shapes as cs
from aioflow.framework import tensor_shape
from aioflow.framework.op_def_registry import register_op

for _send in ("_Send", "_HostSend"):  # _HostSend: the input is in host memory
    register_op(_send).input("tensor: T").attr("T: type").attr("tensor_name: string") \
        .attr("send_device: string").attr("send_device_incarnation: int") \
        .attr("recv_device: string").attr("client_terminated: bool = false") \
        .set_is_stateful().set_shape_fn(lambda op: [])
for _recv in ("_Recv", "_HostRecv"):  # _HostRecv: the output is in host memory
    register_op(_recv).output("tensor: tensor_type").attr("tensor_type: type") \
        .attr("tensor_name: string").attr("send_device: string") \
        .attr("send_device_incarnation: int").attr("recv_device: string") \
        .attr("client_terminated: bool = false") \
        .set_is_stateful().set_is_distributed_communication() \
        .set_shape_fn(lambda op: [tensor_shape.unknown_shape()])

# The copies between a GPU's memory and the host that the partitioner inserts where
# memory types differ (graph/memory_type_copies.py); TF's op names and signature.
for _copy in ("_CopyFromGpuToHost", "_CopyFromHostToGpu"):
    register_op(_copy).input("input: T").output("output: T").attr("T: type") \
        .set_shape_fn(cs.unchanged_shape)
