"""Errors: the vmjit.Error hierarchy, the text and parts of an error (VM
frames), errors of loading, assembling, linking and running; after every
error the same VM still runs a correct call."""

import builtins

import numpy as np
import pytest

import vmjit
from vmjit import errors


def test_hierarchy():
    assert issubclass(vmjit.Error, builtins.RuntimeError)
    assert vmjit.Error is errors.Error
    also = {
        errors.TypeError: builtins.TypeError,
        errors.ValueError: builtins.ValueError,
        errors.IndexError: builtins.IndexError,
        errors.LookupError: builtins.LookupError,
        errors.MemoryError: builtins.MemoryError,
        errors.RecursionError: builtins.RecursionError,
        errors.TimeoutError: builtins.TimeoutError,
        errors.IOError: builtins.OSError,
    }
    for cls, builtin in also.items():
        assert issubclass(cls, vmjit.Error) and issubclass(cls, builtin), cls
        assert cls.kind == cls.__name__
        assert cls.__module__ == "vmjit.errors"
    for name in ("StepLimitError", "InterruptedError", "FormatError",
                 "ParseError", "VerifyError", "LinkError", "LibraryError",
                 "JITError", "InternalError"):
        cls = getattr(errors, name)
        assert issubclass(cls, vmjit.Error) and cls.kind == name
        # Not one of Python's exceptions of another meaning.
        assert not issubclass(cls, (builtins.TimeoutError, builtins.OSError,
                                    builtins.TypeError))
    assert not issubclass(errors.InterruptedError, builtins.InterruptedError)
    assert {cls.__name__ for cls in also} | {"Error"} <= set(errors.__all__)


def test_make_picks_the_class_of_the_kind():
    e = errors._make("ValueError", "bad", ["in function 'f', instruction 0"],
                     "ValueError: bad\n  in function 'f', instruction 0")
    assert type(e) is errors.ValueError
    assert (e.kind, e.message, e.frames) == (
        "ValueError", "bad", ["in function 'f', instruction 0"])
    # A kind with no class of its own (a kernel's): a plain vmjit.Error.
    e = errors._make("KernelError", "oops", [], "KernelError: oops")
    assert type(e) is vmjit.Error
    assert e.kind == "KernelError" and str(e) == "KernelError: oops"


def test_type_error_from_the_vm(values_vm):
    vm = values_vm
    with pytest.raises(vmjit.errors.TypeError) as info:
        vm["call_add"](1, "x")
    e = info.value
    assert isinstance(e, builtins.TypeError) and isinstance(e, vmjit.Error)
    assert e.kind == "TypeError"
    assert e.message == ("scalar.add: argument 2 expected int or float but "
                         "got str")
    assert len(e.frames) == 2
    assert e.frames[0].startswith("in function 'add', instruction 0")
    assert e.frames[1].startswith("in function 'call_add', instruction 1")
    text = str(e)
    assert text.startswith("TypeError: scalar.add: argument 2")
    assert "in function 'add', instruction 0" in text
    assert "in function 'call_add', instruction 1" in text
    # `except TypeError` catches it.
    try:
        vm["add"]("a", 1)
    except TypeError as caught:
        assert "argument 1" in caught.message
    assert vm["call_add"](1, 2) == 3


def test_wrong_argument_count(values_vm):
    with pytest.raises(vmjit.errors.TypeError, match="expected 2 arguments "
                       "but got 3"):
        values_vm["add"](1, 2, 3)
    with pytest.raises(vmjit.errors.TypeError):
        values_vm["add"]()
    assert values_vm["add"](1, 2) == 3


def test_value_error(values_vm):
    with pytest.raises(vmjit.errors.ValueError) as info:
        values_vm["div"](1, 0)
    assert isinstance(info.value, builtins.ValueError)
    assert "integer division by zero" in info.value.message
    assert "in function 'div', instruction 0" in str(info.value)
    assert values_vm["div"](9, 3) == 3


def test_index_error(values_vm):
    with pytest.raises(vmjit.errors.IndexError) as info:
        values_vm["first"](())
    assert isinstance(info.value, builtins.IndexError)
    assert info.value.frames[0].startswith("in function 'first'")
    assert values_vm["first"]((1,)) == 1


def test_recursion_error(values_vm):
    with pytest.raises(vmjit.errors.RecursionError) as info:
        values_vm["recurse"](0)
    assert isinstance(info.value, builtins.RecursionError)
    assert "depth" in info.value.message
    assert "in function 'recurse'" in str(info.value)
    assert values_vm["call_add"](1, 2) == 3


def test_tensor_kernel_error(tensors_vm):
    with pytest.raises(vmjit.errors.ValueError, match="broadcast") as info:
        tensors_vm["add"](np.ones((2, 3)), np.ones(4))
    assert info.value.frames[0].startswith("in function 'add', instruction 0")
    with pytest.raises(vmjit.errors.TypeError, match="Tensor"):
        tensors_vm["sum"](1)
    assert tensors_vm["total"](np.ones((2, 3))) == 6.0


def test_unknown_function(values_vm):
    with pytest.raises(vmjit.errors.LookupError) as info:
        values_vm["no_such_function"]
    assert isinstance(info.value, builtins.LookupError)
    assert "no_such_function" in str(info.value)
    assert "no_such_function" not in values_vm
    assert values_vm["add"](1, 2) == 3


def test_parse_error(input_path):
    path = input_path("bad/parse_error")
    with pytest.raises(vmjit.errors.ParseError) as info:
        vmjit.assemble(path.read_text(), "parse_error.vmasm")
    assert "parse_error.vmasm:4:19:" in str(info.value)
    assert "')'" in str(info.value)
    with pytest.raises(vmjit.errors.ParseError) as info:
        vmjit.assemble(path.read_text())
    assert "<string>:4:19:" in str(info.value)
    with pytest.raises(vmjit.errors.ParseError) as info:
        vmjit.load(path)
    assert "%s:4:19:" % path in str(info.value)
    assert vmjit.assemble(".func main(x)\n  ret %x\n.end\n") is not None


def test_frames_name_the_source_line(tmp_path, make_vm):
    # Each frame of a program assembled from text ends with where its
    # instruction's text begins; a saved binary keeps the positions.
    text = (".func inner(x)\n  %q = call scalar.div(1, %x)\n  ret %q\n.end\n"
            ".func main(x)\n  %r = call inner(%x)\n  ret %r\n.end\n")
    exe = vmjit.assemble(text, "lines.vmasm")
    path = tmp_path / "lines.bin"
    exe.save(path)
    for program in (exe, vmjit.load(path)):
        with pytest.raises(vmjit.errors.ValueError) as info:
            make_vm(program)["main"](0)
        assert info.value.frames == [
            "in function 'inner', instruction 0 (call 'scalar.div') at "
            "lines.vmasm:2:3",
            "in function 'main', instruction 0 (call 'inner') at "
            "lines.vmasm:6:3"]


def test_verify_error(input_path):
    with pytest.raises(vmjit.errors.VerifyError) as info:
        vmjit.load(input_path("bad/verify_error"))
    text = str(info.value)
    assert "function 'main', instruction 0" in text
    assert "helper" in text


def test_missing_file(tmp_path, mode, new_vm):
    missing = tmp_path / "missing.vmasm"
    with pytest.raises(vmjit.errors.IOError) as info:
        vmjit.load(missing)
    assert isinstance(info.value, builtins.OSError)
    assert str(missing) in str(info.value)
    with pytest.raises(vmjit.errors.IOError):
        vmjit.VirtualMachine(str(missing), mode)
    assert new_vm("fib", mode)["main"](7) == 13


def test_not_a_program(tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(vmjit.errors.FormatError) as info:
        vmjit.load(path)
    assert str(path) in str(info.value)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    with pytest.raises(vmjit.errors.FormatError):
        vmjit.load(empty)


def test_truncated_binary(load_input, tmp_path):
    path = tmp_path / "values.bin"
    load_input("values").save(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(vmjit.errors.FormatError):
        vmjit.load(path)


def test_link_error(load_input, mode, values_vm):
    exe = load_input("link_error")  # loads: packed functions link later
    with pytest.raises(vmjit.errors.LinkError) as info:
        vmjit.VirtualMachine(exe, mode)
    assert "no.such.kernel" in str(info.value)
    assert "in function 'main', instruction 0" in str(info.value)
    # Other VMs are not affected.
    assert values_vm["add"](1, 2) == 3


def test_missing_kernel_library(load_input, tmp_path, mode):
    with pytest.raises(vmjit.errors.LibraryError) as info:
        vmjit.VirtualMachine(load_input("values"), mode,
                             libs=[str(tmp_path / "nolib.so")])
    assert info.value.kind == "LibraryError"
    assert "nolib.so" in str(info.value)


def test_vm_usable_after_every_error(values_vm, tensors_vm):
    vm = values_vm
    failures = [
        (lambda: vm["call_add"](1, "x"), vmjit.errors.TypeError),
        (lambda: vm["div"](1, 0), vmjit.errors.ValueError),
        (lambda: vm["first"](()), vmjit.errors.IndexError),
        (lambda: vm["recurse"](0), vmjit.errors.RecursionError),
        (lambda: vm["add"](1, object()), builtins.TypeError),
        (lambda: vm["add"](1, 2**64), builtins.ValueError),
        (lambda: vm["no_such_function"], vmjit.errors.LookupError),
        (lambda: vm.get_outputs("sub"), vmjit.errors.LookupError),
    ]
    for _ in range(3):
        for fail, cls in failures:
            with pytest.raises(cls):
                fail()
            assert vm["call_add"](20, 22) == 42
            assert vm["pair"]("a", 1) == ("a", 1)
    with pytest.raises(vmjit.errors.ValueError):
        tensors_vm["add"](np.ones(2), np.ones(3))
    assert tensors_vm["total"](np.ones(3)) == 3.0


def test_a_tuple_where_a_shape_is_expected_says_how_to_make_one(new_vm,
                                                                 available_modes):
    # What TVM users pass first: a tuple for a Shape. The TypeError says
    # how to make the Shape; a vmjit.Shape is accepted.
    exe = vmjit.assemble(
        ".func main(s)\n"
        "  %r = call vm.builtin.check_shape_info(%s, 2, %void)\n"
        "  ret %s\n"
        ".end\n", "shape.vmasm")
    for mode in available_modes:
        vm = new_vm(exe, mode)
        with pytest.raises(errors.TypeError) as info:
            vm["main"]((1, 4))
        assert "expected a Shape but got Array" in str(info.value)
        assert "vmjit.Shape([...])" in str(info.value)
        assert list(vm["main"](vmjit.Shape([1, 4]))) == [1, 4]
