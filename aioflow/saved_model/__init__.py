"""af.saved_model: v1 SavedModels (tf.compat.v1.saved_model): the loader and the Builder,
the tag, signature and file-name constants, and signature helpers (signature_def_utils,
utils)."""

from aioflow.saved_model import (
    builder,
    constants,
    loader,
    signature_constants,
    signature_def_utils,
    tag_constants,
    utils,
)
from aioflow.saved_model.builder import Builder
from aioflow.saved_model.constants import (
    ASSETS_DIRECTORY,
    ASSETS_KEY,
    LEGACY_INIT_OP_KEY,
    MAIN_OP_KEY,
    SAVED_MODEL_FILENAME_PB,
    SAVED_MODEL_FILENAME_PBTXT,
    SAVED_MODEL_SCHEMA_VERSION,
    VARIABLES_DIRECTORY,
    VARIABLES_FILENAME,
)
from aioflow.saved_model.loader import load, maybe_saved_model_directory

SavedModelBuilder = Builder  # builder_impl's name

__all__ = [
    "ASSETS_DIRECTORY", "ASSETS_KEY", "Builder", "SavedModelBuilder", "builder",
    "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY",
    "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION",
    "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "constants", "load", "loader",
    "maybe_saved_model_directory", "signature_constants", "signature_def_utils",
    "tag_constants", "utils",
]
