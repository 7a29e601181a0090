"""TF's seed rules for random ops (tensorflow/python/framework/random_seed.py).

An op's two seeds come from the graph-level seed (`set_random_seed`, kept on the Graph as
`graph.seed`) and its own `seed` argument:

- both set: (graph seed, op seed), each taken modulo 2**31 - 1;
- graph seed only: the op seed is the graph's count of such ops so far (0, 1, 2, ...), so a
  program gives the same values every time it is built the same way;
- op seed only: the graph seed is DEFAULT_GRAPH_SEED;
- neither: (None, None), written as 0, 0: the kernel then seeds itself at random.

(0, 0) from the rules above becomes (0, 2**31 - 1), since the kernels read 0, 0 as "random".
"""

from __future__ import annotations

import weakref

from aioflow.framework import ops

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1

# Per graph, how many ops have taken their op seed from the counter (TF keeps it beside
# the graph too, not in it).
_op_seed_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The (graph seed, op seed) pair an op created now in the default graph uses."""
    graph = ops.get_default_graph()
    global_seed = graph.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = _op_seed_counters.setdefault(graph, 0)
            _op_seed_counters[graph] = op_seed + 1
        seeds = _truncate_seed(global_seed), _truncate_seed(op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, _truncate_seed(op_seed)
    else:
        seeds = None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def set_random_seed(seed: int | None) -> None:
    """Set the default graph's graph-level seed (TF's tf.compat.v1.set_random_seed)."""
    ops.get_default_graph().seed = seed


def seed_attrs(op_seed: int | None) -> dict:
    """The `seed`/`seed2` attrs of a stateful random op (0 for a seed that is None)."""
    seed, seed2 = get_seed(op_seed)
    return {"seed": seed or 0, "seed2": seed2 or 0}
