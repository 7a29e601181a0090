"""The kernel library (installed as aioflow.kernels)."""
from aioflow.kernels import function_kernels  # noqa: F401,E402
from aioflow.kernels import script_kernels  # noqa: F401,E402
from aioflow.kernels import control_flow_kernels, tensor_array_kernels  # noqa: F401,E402
