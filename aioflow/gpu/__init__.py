"""GPU devices behind one interface (framework/device_context.py): the CuPy device
(cupy_gpu.py) where CuPy and a GPU are present, and the simulated device
(simulated.py: NumPy memory marked as device memory, worker threads as streams) that
AIOFLOW_SIMULATED_GPUS=N makes appear. The runtime asks discovery.py for the GPUs of a
session and reaches them only through DeviceContext."""
