"""Executables: vmjit.load of every format Executable.save writes,
vmjit.assemble, and what an Executable tells about itself."""

import pytest

import vmjit

VALUES_FUNCS = ("identity", "add", "sub", "div", "call_add", "pair", "first",
                "affine", "make_affine", "apply", "recurse")


def _check_values_program(exe, mode, new_vm):
    """Runs a few functions of values.vmasm, whatever file it came from."""
    vm = new_vm(exe, mode)
    assert vm["sub"](10, 3) == 7
    assert vm["call_add"](2, 40) == 42
    assert vm["pair"](1, "x") == (1, "x")
    assert vm["apply"](vm["make_affine"](3, 1), 5) == 16


def test_load_vmasm(load_input, input_path, mode, new_vm):
    exe = vmjit.load(input_path("values"))
    assert isinstance(exe, vmjit.Executable)
    assert exe.name == str(input_path("values"))
    # load accepts str and os.PathLike alike.
    assert vmjit.load(str(input_path("values"))).as_text() == exe.as_text()
    _check_values_program(exe, mode, new_vm)


@pytest.mark.parametrize("fmt,magic", [("vmjit", b"VMJITEXE"),
                                       ("tvm", None),
                                       ("vmasm", b".func")])
def test_save_and_load_every_format(load_input, tmp_path, mode, new_vm, fmt,
                                    magic):
    exe = load_input("values")
    path = tmp_path / ("saved." + fmt)
    exe.save(path, format=fmt)
    data = path.read_bytes()
    assert data
    if magic is not None:
        assert data.startswith(magic)
    else:
        # TVM's VMExecutable: a binary header, neither of the others.
        assert not data.startswith(b"VMJITEXE")
        assert not data.lstrip().startswith(b".")
    loaded = vmjit.load(path)
    assert [f.name for f in loaded.functions] == \
        [f.name for f in exe.functions]
    assert [f.params for f in loaded.functions] == \
        [f.params for f in exe.functions]
    if fmt != "tvm":  # the TVM format keeps no register names
        assert loaded.as_text() == exe.as_text()
    _check_values_program(loaded, mode, new_vm)


def test_save_default_format_follows_the_extension(load_input, tmp_path):
    exe = load_input("values")
    exe.save(tmp_path / "a.vmasm")
    exe.save(tmp_path / "a.bin")
    assert (tmp_path / "a.vmasm").read_text() == exe.as_text()
    assert (tmp_path / "a.bin").read_bytes().startswith(b"VMJITEXE")
    # .tvmexec: TVM's format, as `vmjit convert` decides.
    fib = load_input("fib")
    fib.save(tmp_path / "a.tvmexec")
    fib.save(tmp_path / "b.tvm", format="tvm")
    assert (tmp_path / "a.tvmexec").read_bytes() == \
        (tmp_path / "b.tvm").read_bytes()


def test_save_errors(load_input, tmp_path):
    exe = load_input("values")
    with pytest.raises(ValueError, match="format 'zip'"):
        exe.save(tmp_path / "a.zip", format="zip")
    with pytest.raises(vmjit.errors.IOError) as info:
        exe.save(tmp_path / "no" / "such" / "dir" / "a.bin")
    assert isinstance(info.value, OSError)
    assert "cannot write" in str(info.value)


def test_assemble(input_path, mode, new_vm):
    text = input_path("values").read_text()
    exe = vmjit.assemble(text)
    assert exe.name is None
    assert "(assembled)" in repr(exe)
    assert exe.as_text() == vmjit.load(input_path("values")).as_text()
    _check_values_program(exe, mode, new_vm)


def test_as_text_assembles_back(load_input):
    for name in ("values", "tensors", "loop_sum", "fib"):
        exe = load_input(name)
        text = exe.as_text()
        assert ".func" in text
        assert vmjit.assemble(text, name=name).as_text() == text


def test_functions(load_input):
    funcs = load_input("values").functions
    assert all(isinstance(f, vmjit.FunctionInfo) for f in funcs)
    by_name = {f.name: f for f in funcs}
    assert tuple(f.name for f in funcs[:len(VALUES_FUNCS)]) == VALUES_FUNCS
    sub = by_name["sub"]
    assert sub.kind == "bytecode"
    assert sub.params == ("a", "b")
    assert sub.num_params == 2
    assert sub.registers == 3
    assert sub.instructions == 2
    assert by_name["affine"].params == ("i", "a", "b")
    packed = by_name["scalar.add"]
    assert packed.kind == "packed"
    assert packed.params == ()
    assert packed.instructions == 0
    # Every callee that is not a .func is a packed function.
    assert {f.name for f in funcs if f.kind == "packed"} == {
        "scalar.add", "scalar.sub", "scalar.div", "scalar.mul",
        "vm.builtin.copy", "vm.builtin.make_tuple",
        "vm.builtin.tuple_getitem", "vm.builtin.make_closure",
        "vm.builtin.invoke_closure"}


def test_stats(load_input):
    exe = load_input("tensors")
    stats = exe.stats()
    assert isinstance(stats, dict)
    funcs = exe.functions
    bytecode = [f for f in funcs if f.kind == "bytecode"]
    assert stats["functions"]["count"] == len(funcs)
    assert stats["functions"]["by_kind"]["bytecode"] == len(bytecode)
    assert stats["functions"]["by_kind"]["packed"] == \
        len(funcs) - len(bytecode)
    assert stats["instructions"] == sum(f.instructions for f in bytecode)
    assert stats["constants"]["count"] == 1
    assert stats["constants"]["tensor_bytes"] == 2 * 3 * 2  # bfloat16 [2, 3]
    table = stats["function_table"]
    assert [row["name"] for row in table] == [f.name for f in funcs]
    text = str(stats)
    assert "functions: %d" % len(funcs) in text
    for f in funcs:
        assert f.name in text


def test_repr(load_input, input_path):
    exe = load_input("values")
    assert str(input_path("values")) in repr(exe)
    assert "%d functions" % len(exe.functions) in repr(exe)


def test_vm_accepts_a_path(input_path, mode):
    vm = vmjit.VirtualMachine(str(input_path("fib")), mode,
                              tier_threshold=1 if mode == "tiered" else None)
    assert vm["main"](10) == 55
    assert vm.executable.name == str(input_path("fib"))
