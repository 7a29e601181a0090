"""Graph optimization passes and their registry."""

from aioflow.passes import (  # noqa: F401  (importing a pass registers it)
    lower_functional_ops,
    parallel_concat_remove,
    replicate_constants,
    resource_variable_read,
)
