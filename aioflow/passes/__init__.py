"""Graph optimization passes and their registry."""
