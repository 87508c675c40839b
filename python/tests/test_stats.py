"""VirtualMachine.stats() counts every call in every mode: a Python
function's row shows the calls it counted itself, whichever tier made
them (the interpreter, tier-1 or tier-2 code, after an OSR entry)."""

import itertools

import vmjit

_count = itertools.count(1)


@vmjit.register_func("py.count", override=True)
def _py_count():
    """Returns how many times it was called, this call included."""
    return next(_count)


def test_packed_call_counts_match_the_callee(make_vm, mode):
    global _count
    vm = make_vm("count_calls", no_cache=True)
    for n in (1, 50, 2000):
        _count = itertools.count(1)
        before = {f["name"]: f["calls"] for f in vm.stats()["functions"]}
        last = vm["main"](n)
        assert last == 2 * n + 1
        after = {f["name"]: f for f in vm.stats()["functions"]}
        assert after["py.count"]["calls"] - before.get("py.count", 0) == last
        assert after["py.count"]["kind"] == "packed"
        # JIT code runs scalar.add inline without counting it.
        add = after["scalar.add"]
        assert add.get("calls_counted", True) == (mode == "bytecode")
        # Uncounted: no number, never the interpreter's share of them.
        assert (add["calls"] is None) == (mode != "bytecode")
        if mode == "bytecode":
            assert add["calls"] - before.get("scalar.add", 0) == n
        assert after["tick"]["calls"] - before["tick"] == n
