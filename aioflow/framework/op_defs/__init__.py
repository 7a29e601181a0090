"""Built-in op definitions (OpDefs), one module per op family."""

from aioflow.framework.op_defs import array_ops, math_ops, nn_ops, no_op  # noqa: F401
from aioflow.framework.op_defs import function_ops  # noqa: F401,E402
from aioflow.framework.op_defs import control_flow_ops, data_flow_ops  # noqa: F401,E402
from aioflow.framework.op_defs import script_ops  # noqa: F401,E402
