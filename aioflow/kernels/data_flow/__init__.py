"""The data-flow kernels: queues, TensorArrays, TensorLists.

kernels/__init__.py imports each module (importing registers its kernels)."""
