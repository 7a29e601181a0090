"""The FuncGraph of a functional control-flow op's branch or body, as TF's FuncGraph
(tensorflow/python/framework/func_graph.py) holds one for cond_v2 / while_v2: ordered
`inputs` and `outputs`, and captures made as TF makes them.

A tensor of another graph used by an op created here is captured: a Placeholder of its
dtype and shape, named after the captured tensor's op in the current name scope (so
capturing `w` while building `gradients/mul_grad/Mul` makes `gradients/mul_grad/Mul/w`),
created outside any control dependencies, with `_user_specified_name` set to that name.
The placeholder is appended to `inputs`; the pair (outer tensor, placeholder) to
`captures`. Subclasses change what capturing a tensor means (`_capture_helper`), as
cond_v2's gradient graph does for the forward branch's intermediates. While it is the
default graph, ops are built in it whatever graph their inputs are in (TF's
`building_function`), so they capture them."""

from __future__ import annotations

from aioflow.data.func_graph import FuncGraph
from aioflow.framework import ops
from aioflow.ops import array_ops
from aioflow.proto import attr_value_pb2


class ControlFlowFuncGraph(FuncGraph):
    """A FuncGraph with TF's `inputs`, `outputs` and capture naming."""

    building_function = True

    def __init__(self, name: str, outer: ops.Graph):
        super().__init__(name, outer)
        self.outer_graph = outer
        self.inputs: list[ops.Tensor] = []
        self.outputs: list[ops.Tensor] = []
        self.control_outputs: list[ops.Operation] = []
        # (op name, output index) -> output arg name, for a graph read from a FunctionDef
        self.output_names: dict[tuple[str, int], str] | None = None

    @property
    def external_captures(self) -> list[ops.Tensor]:
        return [outer for outer, _ in self.captures]

    @property
    def internal_captures(self) -> list[ops.Tensor]:
        return [inner for _, inner in self.captures]

    def reset_captures(self, outer: list, inner: list) -> None:
        self.captures = list(zip(outer, inner, strict=True))

    def capture(self, tensor: ops.Tensor) -> ops.Tensor:
        return self._capture_helper(tensor, tensor.op.name)

    def is_captured(self, tensor: ops.Tensor) -> bool:
        return any(outer is tensor for outer, _ in self.captures)

    def _capture_helper(self, tensor: ops.Tensor, name: str) -> ops.Tensor:
        """The placeholder standing for `tensor`: the one made when it was first captured,
        else a new one, recorded as a capture."""
        for outer, inner in self.captures:
            if outer is tensor:
                return inner
        with self.as_default(), self.control_dependencies(None):
            inner = array_ops.placeholder(tensor.dtype, tensor.shape, name=name)
        inner.op._set_attr("_user_specified_name",
                           attr_value_pb2.AttrValue(s=name.encode()))
        self.captures.append((tensor, inner))
        self.inputs.append(inner)
        return inner

    @property
    def output_types(self) -> list:
        return [t.dtype for t in self.outputs]

    @property
    def output_shapes(self) -> list:
        return [t.shape for t in self.outputs]
