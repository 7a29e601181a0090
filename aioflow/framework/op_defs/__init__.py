"""Built-in op definitions (OpDefs), one module per op family."""
