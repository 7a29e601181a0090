"""TF Serving's Classify and Regress: tf.Example inputs (a list, or a list sharing a
context), run through a signature of method tensorflow/serving/classify (outputs
`classes` and/or `scores`, one row per example) or tensorflow/serving/regress (output
`outputs`, one value per example), answered as TF Serving's results.

Examples come as the gRPC Input proto or as REST JSON (`"examples": [{feature: value}]`,
`"context": {...}`); a JSON feature value is a value or a list of them: integers make an
int64_list, numbers with any fraction a float_list, strings or `{"b64": ...}` a
bytes_list. An example with a context is the context's serialized bytes followed by its
own (TF Serving's merge: the example's features win)."""

from __future__ import annotations

import base64
import binascii

import numpy as np

from aioflow.framework import errors
from aioflow.proto import example_pb2
from aioflow.saved_model import signature_constants as sc
from aioflow.serving.loader import Signature


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _feature_json(feature, name: str, value) -> None:
    items = value if isinstance(value, list) else [value]
    if not items:
        return  # (an empty list: a feature with no values)
    if all(isinstance(v, (str, dict)) for v in items):
        out = []
        for v in items:
            if isinstance(v, dict):
                if set(v) != {"b64"} or not isinstance(v["b64"], str):
                    raise _invalid(f'Feature "{name}": an object value must be '
                                   f'{{"b64": "<base64>"}}')
                try:
                    out.append(base64.b64decode(v["b64"], validate=True))
                except (binascii.Error, ValueError):
                    raise _invalid(f'Feature "{name}": invalid base64') from None
            else:
                out.append(v.encode("utf-8"))
        feature.bytes_list.value.extend(out)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        feature.int64_list.value.extend(items)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        feature.float_list.value.extend(float(v) for v in items)
    else:
        raise _invalid(f'Feature "{name}" must hold numbers, strings or {{"b64": ...}} '
                       f"values of one kind, got {value!r}")


def example_from_json(doc, what: str) -> bytes:
    if not isinstance(doc, dict):
        raise _invalid(f"{what} must be a JSON object of features, got {doc!r}")
    proto = example_pb2.Example()
    for name, value in doc.items():
        _feature_json(proto.features.feature[name], name, value)
    return proto.SerializeToString()


def examples_from_json(doc: dict) -> list[bytes]:
    """The serialized examples of a REST classify / regress body."""
    examples = doc.get("examples")
    if not isinstance(examples, list):
        raise _invalid('Request body must have an "examples" list')
    context = example_from_json(doc["context"], "context") if "context" in doc else b""
    out = [context + example_from_json(e, "An example") for e in examples]
    if not out:
        raise _invalid("Input is empty.")
    return out


def examples_from_input(request_input) -> list[bytes]:
    """The serialized examples of a gRPC Input."""
    kind = request_input.WhichOneof("kind")
    if kind == "example_list":
        out = [e.SerializeToString() for e in request_input.example_list.examples]
    elif kind == "example_list_with_context":
        with_context = request_input.example_list_with_context
        context = with_context.context.SerializeToString()
        out = [context + e.SerializeToString() for e in with_context.examples]
    else:
        out = []
    if not out:
        raise _invalid("Input is empty.")
    return out


def _examples_input(sig: Signature, method: str, what: str) -> str:
    if sig.method_name != method:
        raise _invalid(f"Expected {what} signature method_name to be {method}. Was: "
                       f"{sig.method_name}")
    if list(sig.inputs) != [sc.CLASSIFY_INPUTS]:
        raise _invalid(f"Expected one input Tensor ({sc.CLASSIFY_INPUTS}) in the {what} "
                       f"signature, got {sorted(sig.inputs)}")
    return sc.CLASSIFY_INPUTS


def classify_outputs(sig: Signature) -> tuple[str, ...]:
    """The classification outputs to run (classes and/or scores), checked."""
    _examples_input(sig, sc.CLASSIFY_METHOD_NAME, "classification")
    keys = tuple(k for k in (sc.CLASSIFY_OUTPUT_CLASSES, sc.CLASSIFY_OUTPUT_SCORES)
                 if k in sig.outputs)
    if not keys:
        raise _invalid("Expected classification signature outputs to contain classes "
                       "and/or scores")
    return keys


def regress_outputs(sig: Signature) -> tuple[str, ...]:
    _examples_input(sig, sc.REGRESS_METHOD_NAME, "regression")
    if sc.REGRESS_OUTPUTS not in sig.outputs:
        raise _invalid("No regression outputs found in SignatureDef")
    return (sc.REGRESS_OUTPUTS,)


def inputs_of(serialized: list[bytes]) -> dict[str, np.ndarray]:
    array = np.empty(len(serialized), dtype=object)
    array[:] = serialized
    return {sc.CLASSIFY_INPUTS: array}


def classifications(outputs: dict, batch: int) -> list[list[tuple[str, float]]]:
    """Per example, its (label, score) pairs: a missing classes output gives "" labels, a
    missing scores output 0 scores."""
    classes = outputs.get(sc.CLASSIFY_OUTPUT_CLASSES)
    scores = outputs.get(sc.CLASSIFY_OUTPUT_SCORES)
    for key, value in ((sc.CLASSIFY_OUTPUT_CLASSES, classes),
                       (sc.CLASSIFY_OUTPUT_SCORES, scores)):
        if value is not None and (np.ndim(value) != 2 or np.shape(value)[0] != batch):
            raise _invalid(f"Expected Tensor shape: [{batch} num_classes] but got "
                           f"[{','.join(map(str, np.shape(value)))}] ({key})")
    if classes is not None and scores is not None and np.shape(classes) != np.shape(scores):
        raise _invalid(f"Tensors class and score should match in shape. Shapes: "
                       f"{list(np.shape(classes))} vs. {list(np.shape(scores))}")
    width = np.shape(classes if classes is not None else scores)[1]
    out = []
    for i in range(batch):
        row = []
        for j in range(width):
            label = classes[i, j] if classes is not None else b""
            label = label.decode("utf-8", "replace") if isinstance(label, bytes) else str(label)
            row.append((label, float(scores[i, j]) if scores is not None else 0.0))
        out.append(row)
    return out


def regressions(outputs: dict, batch: int) -> list[float]:
    values = np.asarray(outputs[sc.REGRESS_OUTPUTS])
    if values.shape not in ((batch,), (batch, 1)):
        raise _invalid(f"Expected output Tensor shape to be either [batch_size] or "
                       f"[batch_size, 1] but got [{','.join(map(str, values.shape))}]")
    return [float(v) for v in values.reshape(-1)]


async def run_examples(service, mv, sig: Signature, api: str, serialized: list[bytes],
                       timeout_ms: int = 0, default_timeout_ms: int = 0) -> list:
    """Classify ("classify") or regress ("regress") the serialized examples through
    `sig` of model version `mv`: per example its (label, score) pairs, or its value."""
    keys = classify_outputs(sig) if api == "classify" else regress_outputs(sig)
    outputs = await service.run(mv, sig, inputs_of(serialized), keys, timeout_ms,
                                default_timeout_ms)
    if api == "classify":
        return classifications(outputs, len(serialized))
    return regressions(outputs, len(serialized))
