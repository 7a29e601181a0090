"""TensorFlow Serving's API and config messages (package ``aioflow.tfproto.serving``);
see README.md."""
