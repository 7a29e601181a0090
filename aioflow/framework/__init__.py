"""The framework: dtypes, shapes, tensors, the op registry and the Python graph API."""
