"""The runtime graph IR: nodes, edges, construction, rewrite, pruning, partitioning."""
