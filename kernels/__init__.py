"""The kernel library (installed as aioflow.kernels)."""
