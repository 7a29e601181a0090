"""Talk to a running `aioflow serve` with TensorFlow Serving's own Python client
(tensorflow-serving-api's stubs and messages, TF's make_tensor_proto/make_ndarray):
proves the wire compatibility of aioflow's serving protos and service names.

    python check_serving_with_tf_serving_client.py GRPC_PORT MODEL X_JSON

Run with a Python that has tensorflow and tensorflow-serving-api (tests/test_serving.py
does when AIOFLOW_TF_SERVING_PYTHON names one). Prints one JSON line: the prediction,
the signature's input and output tensor names from GetModelMetadata (unpacked from its
Any as TF Serving's SignatureDefMap), the version states from GetModelStatus, and the
status code of a request for an unknown model. Exits 3 when tensorflow_serving is absent.
"""

import json
import sys

try:
    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import (
        get_model_metadata_pb2,
        get_model_status_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )
except ImportError as e:
    print(f"tensorflow_serving absent: {e}", file=sys.stderr)
    sys.exit(3)


def main():
    port, model, x = int(sys.argv[1]), sys.argv[2], np.float32(json.loads(sys.argv[3]))
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    predictions = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    models = model_service_pb2_grpc.ModelServiceStub(channel)

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = "serving_default"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(x))
    response = predictions.Predict(request, timeout=30)
    outputs = {k: tf.make_ndarray(v).tolist() for k, v in response.outputs.items()}

    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = model
    metadata = predictions.GetModelMetadata(request, timeout=30)
    sigmap = get_model_metadata_pb2.SignatureDefMap()
    assert metadata.metadata["signature_def"].Unpack(sigmap)
    sig = sigmap.signature_def["serving_default"]

    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = model
    status = models.GetModelStatus(request, timeout=30)

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "no_such_model"
    try:
        predictions.Predict(request, timeout=30)
        missing = "OK"
    except grpc.RpcError as e:
        missing = e.code().name
    print(json.dumps({
        "outputs": outputs, "version": response.model_spec.version.value,
        "inputs": {k: v.name for k, v in sig.inputs.items()},
        "output_names": {k: v.name for k, v in sig.outputs.items()},
        "states": [(s.version, get_model_status_pb2.ModelVersionStatus.State.Name(s.state))
                   for s in status.model_version_status],
        "missing": missing}))


if __name__ == "__main__":
    main()
