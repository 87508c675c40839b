"""More of TVM's names: Tensor.asnumpy, ProfileReport.csv,
Executable.as_python and vmjit.nd (array, empty)."""

import ast
import builtins
import csv
import io

import numpy as np
import pytest

import vmjit

#===--- Tensor.asnumpy ----------------------------------------------------===#

def test_asnumpy_is_numpy():
    t = vmjit.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    a = t.asnumpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    assert np.array_equal(a, t.numpy())
    assert np.shares_memory(a, t.numpy())
    a[0, 0] = 7  # writable, as numpy()
    assert t.numpy()[0, 0] == 7


#===--- ProfileReport.csv -------------------------------------------------===#

def test_profile_csv(make_vm):
    report = make_vm("fib").profile("main", 10)
    rows = list(csv.reader(io.StringIO(report.csv())))
    assert rows[0] == ["Name", "Count", "Duration (us)", "Mean (us)",
                       "Percent"]
    assert [(r[0], int(r[1])) for r in rows[1:]] == [
        (r.name, r.calls) for r in report.rows]
    for line, row in zip(rows[1:], report.rows):
        assert float(line[2]) == pytest.approx(row.total_ns / 1e3, abs=1e-3)
        assert float(line[3]) == pytest.approx(row.mean_ns / 1e3, abs=1e-3)
        assert 0 <= float(line[4]) <= 100.0 or row.name == "fib"


def test_profile_csv_quotes_names():
    report = vmjit.ProfileReport(1000, [('a "b", c', 2, 500.0)])
    rows = list(csv.reader(io.StringIO(report.csv())))
    assert rows[1] == ['a "b", c', "2", "0.500", "0.250", "50.00"]
    assert vmjit.ProfileReport(0, []).csv().splitlines() == [
        "Name,Count,Duration (us),Mean (us),Percent"]


#===--- Executable.as_python ----------------------------------------------===#

def _body(text):
    """as_python's text without its header comment, constants and the list
    of packed functions: the code."""
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    while lines and not lines[0].startswith("def "):
        lines.pop(0)
    return "\n".join(lines).strip()


def _head(text):
    """as_python's text before the code (the constants, the packed
    functions), without the header comment."""
    head = text.split("\ndef ")[0]
    return head[head.index("\n\n"):].strip()  # after the header


def test_as_python_fib(load_input):
    exe = load_input("fib")
    text = exe.as_python()
    ast.parse(text)
    assert text.splitlines()[0] == "# " + exe.name
    assert _head(text) == \
        "# packed functions: scalar.lt, scalar.sub, scalar.add"
    assert _body(text) == """\
def fib(n):
    c = scalar.lt(n, 2)
    if not c: goto("recurse")
    return n
    label("recurse")
    a = scalar.sub(n, 1)
    fa = fib(a)
    b = scalar.sub(n, 2)
    fb = fib(b)
    s = scalar.add(fa, fb)
    return s


def main(n):
    r = fib(n)
    return r"""


def test_as_python_names(tmp_path):
    # Built without names (TVM's executables have none): r0.., c0.., L0..
    named = vmjit.assemble("""
.const $k = int 3
.const $shape = shape [2, 3]
.const $w = tensor float32 [2] [0.5, 1.5]
.const $s = str "hi\\n"
.const $huge = float -inf
.func main(x)
  %c = call scalar.lt(%x, $k)
  if %c else big
  %y = call scalar.add(%x, $k)
  goto done
big:
  %y = call scalar.sub(%x, $k)
done:
  call vm.builtin.reshape(%vm, $shape)
  ret %y
.end
""", "named.vmasm")
    text = named.as_python()
    ast.parse(text)
    assert _head(text).splitlines()[:5] == [
        "k = 3", "shape = vmjit.Shape([2, 3])",
        "w = vmjit.tensor([0.5, 1.5], dtype='float32')", "s = 'hi\\n'",
        'huge = float("-inf")']
    body = _body(text)
    assert 'if not c: goto("big")' in body
    assert 'goto("done")' in body and 'label("done")' in body
    assert "vm.builtin.reshape(vm, shape)" in body
    assert _body(vmjit.assemble(named.as_text()).as_python()) == body
    # TVM's format keeps the parameters' names only: constants, other
    # registers and labels by number, labels in the order of the code.
    path = tmp_path / "named.tvmexec"
    named.save(path, format="tvm")
    text = vmjit.load(path).as_python()
    ast.parse(text)
    assert _head(text).splitlines()[0] == "c0 = 3"
    assert _body(text) == """\
def main(x):
    r1 = scalar.lt(x, c0)
    if not r1: goto("L0")
    r2 = scalar.add(x, c0)
    goto("L1")
    label("L0")
    r2 = scalar.sub(x, c0)
    label("L1")
    vm.builtin.reshape(vm, c1)
    return r2"""


def test_as_python_names_python_cannot_write():
    exe = vmjit.assemble(""".const $big = tensor float32 [32] [ZEROS]
.extern "my kernel;1"
.func "main-v2"("x", "x", class)
  %r = call "my kernel;1"(%0, %1, %class, $big)
  %s = call goto(%r)
  ret %s
.end
.func goto(lambda_)
  ret %lambda_
.end
""".replace("ZEROS", ", ".join(["0"] * 32)))
    text = exe.as_python()
    ast.parse(text)
    # A parameter name that repeats or is a keyword gives rN; functions
    # Python cannot name are _N (their index) with their name in a comment,
    # and called by call("NAME").
    assert _head(text) == """\
big = vmjit.empty((32,), 'float32')  # 32 values

# packed functions: 'my kernel;1'"""
    assert _body(text) == """\
def _1(x, r1, r2):
    # the function 'main-v2'
    r = call('my kernel;1', x, r1, r2, big)
    s = call('goto', r)
    return s


def _2(lambda_):
    # the function 'goto'
    return lambda_"""


@pytest.mark.parametrize("name", ["add_loop", "count_calls", "fib",
                                  "kernel_library", "link_error", "loop_sum",
                                  "python_funcs", "tensors", "values"])
def test_as_python_parses(load_input, name):
    text = load_input(name).as_python()
    tree = ast.parse(text)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    bytecode = [f.name for f in load_input(name).functions
                if f.kind == "bytecode"]
    assert len(defs) == len(bytecode)


#===--- vmjit.nd ---------------------------------------------------------===#

def test_nd_array_copies():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = vmjit.nd.array(a)
    assert isinstance(t, vmjit.Tensor)
    assert t.shape == (2, 3) and t.dtype == "float32"
    assert not np.shares_memory(t.numpy(), a)
    a[0, 0] = 100
    assert t.numpy()[0, 0] == 0
    assert vmjit.nd.array(a.T).numpy().tolist() == a.T.tolist()  # strided
    u = vmjit.nd.array(t)  # a vmjit.Tensor: copied too
    assert u.data_ptr != t.data_ptr and np.array_equal(u.numpy(), t.numpy())
    v = vmjit.nd.array([[1, 2], [3, 4]], device=vmjit.cpu())
    assert v.dtype == "int64" and v.numpy().tolist() == [[1, 2], [3, 4]]
    assert vmjit.nd.array(2.5).shape == ()
    with pytest.raises(builtins.ValueError, match="CPU only"):
        vmjit.nd.array(a, device="cuda")


def test_nd_empty():
    t = vmjit.nd.empty((2, 3), "int32")
    assert t.shape == (2, 3) and t.dtype == "int32"
    assert vmjit.nd.empty([4]).dtype == "float32"
    assert vmjit.nd.empty((1,), device="cpu").shape == (1,)
    with pytest.raises(builtins.ValueError, match="CPU only"):
        vmjit.nd.empty((1,), device=vmjit.Device(2, 0))
