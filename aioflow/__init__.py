"""aioflow: a TensorFlow-1-style dataflow graph runtime whose executor is native asyncio."""

__version__ = "0.1.0"
