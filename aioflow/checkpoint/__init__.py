"""Checkpoints: the Saver (its graph runs SaveV2 / RestoreV2; it keeps the `checkpoint`
state file), meta graphs, and checkpoint readers, in TensorFlow's V2 format (aioflow/lib/
tensor_bundle.py). The public names stay where TF has them: af.train.Saver, ..."""
