"""The kernel library (installed as aioflow.kernels)."""
from aioflow.kernels import function_kernels  # noqa: F401,E402
