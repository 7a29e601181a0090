"""Python op builders: array, math, nn, control flow, state, data flow, async."""
