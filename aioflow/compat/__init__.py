"""TensorFlow's module layouts over aioflow's objects: `import aioflow.compat.v1 as tf`."""
