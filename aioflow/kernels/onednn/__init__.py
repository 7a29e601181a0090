"""Kernels on oneDNN (the library TF's own CPU kernels use), an optional backend: with the
`aioflow[onednn]` extra installed (the onednn-cpu-gomp wheel, oneDNN 3.2; or Intel's
`onednn` wheel, oneDNN 3.11+, dnnl_api.py) its kernels
take precedence over the NumPy/numba ones of the same ops (registered at a higher
priority) and fall back to them for what they do not run; AIOFLOW_ONEDNN=0 turns the
backend off. docs/onednn.md says what runs here.

aioflow/kernels/__init__.py imports each module (importing registers its kernels)."""
