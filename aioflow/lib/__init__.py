"""File formats and hashes that know no graph: the tensor bundle (checkpoints' .index and
.data files), CRC-32C, TF's fingerprint hash, record I/O (TFRecord framing) and event files.
Kernels, loaders and the summary writer build on them."""
