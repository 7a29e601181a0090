"""af.saved_model: `await load(export_dir)` (TF 2's tf.saved_model.load: TF 2 and v1
SavedModels, signatures as async callables), v1 SavedModels (tf.compat.v1.saved_model):
the v1 loader (`loader.load(sess, tags, export_dir)`) and the Builder, the tag, signature
and file-name constants, and signature helpers (signature_def_utils, utils)."""

from aioflow.saved_model import (
    builder,
    constants,
    loader,
    loader_v2,
    object_graph,
    signature,
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
from aioflow.saved_model.loader import maybe_saved_model_directory
from aioflow.saved_model.loader_v2 import LoadedModel, load
from aioflow.saved_model.signature import Signature

SavedModelBuilder = Builder  # builder_impl's name

__all__ = [
    "ASSETS_DIRECTORY", "ASSETS_KEY", "Builder", "SavedModelBuilder", "builder",
    "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY",
    "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION",
    "VARIABLES_DIRECTORY", "VARIABLES_FILENAME", "LoadedModel", "Signature", "constants",
    "load", "loader", "loader_v2", "object_graph", "signature",
    "maybe_saved_model_directory", "signature_constants", "signature_def_utils",
    "tag_constants", "utils",
]
