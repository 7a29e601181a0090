"""TensorFlow-wire-compatible protobuf messages (package ``aioflow.tfproto``).

The ``*.proto`` files here carry TensorFlow's message names, field names,
field numbers and enum values, so bytes written by either side parse in the
other. The ``*_pb2.py`` modules are generated from them; see README.md.
"""
