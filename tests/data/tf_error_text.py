"""For the fixture scripts (run with TensorFlow): an exception TF raised as the fixture
records it, {"error": class name, "message": TF's message}, without what TF's Python adds
around it (the "Graph execution error" header, the traceback of the node's creation, the
"[[{{node ...}}]]" lines)."""


def error_record(e: BaseException) -> dict:
    text = str(e)
    if text.startswith("Graph execution error:\n\n"):
        text = text[len("Graph execution error:\n\n"):]
    if text.startswith("Detected at node"):  # the Python traceback TF puts first
        text = text.rsplit("\nNode: ", 1)[1].split("\n", 1)[1]
    return {"error": type(e).__name__, "message": text.split("\n\t [[")[0]}
