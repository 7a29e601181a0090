"""Built-in op definitions (OpDefs), one module per op family."""

from . import (  # noqa: F401  (importing a module registers its ops)
    array_ops,
    bitwise_ops,
    control_flow_ops,
    data_flow_ops,
    function_ops,
    fused_ops,
    image_ops,
    io_ops,
    linalg_ops,
    math_extra_ops,
    math_ops,
    nn_conv_ops,
    nn_ops,
    no_op,
    random_ops,
    script_ops,
    segment_ops,
    sendrecv_ops,
    sparse_ops,
    string_ops,
)
