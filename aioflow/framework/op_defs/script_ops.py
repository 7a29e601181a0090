"""OpDefs of ops that call Python: PyFunc (TF's, run on the thread pool) and AsyncPyFunc
(aioflow's: a coroutine function awaited on the event loop)."""

from aioflow.framework.op_def_registry import register_op

for _name in ("PyFunc", "PyFuncStateless", "AsyncPyFunc"):
    _b = register_op(_name).input("input: Tin").output("output: Tout").attr("token: string") \
        .attr("Tin: list(type) >= 0").attr("Tout: list(type) >= 0")
    if _name != "PyFuncStateless":
        _b.set_is_stateful()
