"""Values between Python and vmjit: scalars, strings, bytes, None, tuples,
shapes, devices, functions; what cannot be converted."""

import builtins
import math

import numpy as np
import pytest

import vmjit

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


@pytest.mark.parametrize("value", [
    0, 1, -7, INT64_MAX, INT64_MIN,
    0.0, -2.5, 1e300, math.inf, -math.inf,
    True, False,
    "", "text", "h\u00e9llo \u2713 \U0001F600", "nul\x00inside",
    b"", b"bytes", b"\x00\xff\x80",
    None,
], ids=repr)
def test_scalar_round_trip(values_vm, value):
    out = values_vm["identity"](value)
    assert type(out) is type(value)
    assert out == value


def test_nan_round_trip(values_vm):
    out = values_vm["identity"](math.nan)
    assert isinstance(out, float) and math.isnan(out)


def test_bool_is_not_int(values_vm):
    out = values_vm["identity"](True)
    assert out is True
    # Arithmetic on bools reads them as 0/1 and gives ints.
    out = values_vm["add"](True, True)
    assert type(out) is int and out == 2


def test_scalar_arithmetic(values_vm):
    vm = values_vm
    assert vm["add"](2, 3) == 5 and type(vm["add"](2, 3)) is int
    assert vm["add"](2, 0.5) == 2.5
    assert vm["sub"](INT64_MIN, 1) == INT64_MAX  # wraps as int64
    assert vm["div"](-7, 2) == -3
    assert vm["div"](7.0, 2) == 3.5
    assert vm["call_add"](-1, 1) == 0


def test_tuples(values_vm):
    vm = values_vm
    nested = (1, (2.5, "s", (None, b"b")), ())
    out = vm["identity"](nested)
    assert out == nested
    assert type(out) is tuple and type(out[1]) is tuple
    assert vm["pair"](1, "x") == (1, "x")
    assert vm["pair"]((1, 2), None) == ((1, 2), None)
    assert vm["first"]((7, 8)) == 7
    assert vm["first"](("a",)) == "a"


def test_lists_come_back_as_tuples(values_vm):
    out = values_vm["identity"]([1, [2, 3], "x"])
    assert out == (1, (2, 3), "x")
    assert type(out) is tuple and type(out[1]) is tuple
    assert values_vm["first"]([5, 6]) == 5


def test_shape_round_trip(values_vm):
    vm = values_vm
    shape = vmjit.Shape([2, 3, 4])
    out = vm["identity"](shape)
    assert isinstance(out, vmjit.Shape)
    assert out == shape == (2, 3, 4)
    assert repr(out) == "Shape([2, 3, 4])"
    out = vm["identity"](vmjit.Shape([]))
    assert isinstance(out, vmjit.Shape) and out == ()
    # A plain tuple is a tuple of values, not a shape.
    out = vm["identity"]((2, 3))
    assert type(out) is tuple and not isinstance(out, vmjit.Shape)
    # A shape inside a tuple stays a shape.
    out = vm["pair"](vmjit.Shape([5]), 1)
    assert isinstance(out[0], vmjit.Shape) and out[0] == (5,)


def test_shape_of_a_tensor(tensors_vm):
    out = tensors_vm["shape_of"](np.zeros((2, 0, 7), "float32"))
    assert isinstance(out, vmjit.Shape)
    assert out == (2, 0, 7)
    # And the shape goes back in as a shape.
    assert tensors_vm["identity"](out) == (2, 0, 7)


def test_device_round_trip(values_vm):
    out = values_vm["identity"](vmjit.cpu())
    assert isinstance(out, vmjit.Device)
    assert out == vmjit.cpu(0) == (1, 0)
    assert repr(out) == "cpu(0)"


def test_function_values(values_vm):
    vm = values_vm
    f = vm["make_affine"](3, 1)
    assert isinstance(f, vmjit.Function)
    assert f(5) == 16  # called from Python
    assert vm["apply"](f, 5) == 16  # passed back to the VM
    assert vm["apply"](f, -1) == -2
    # A VM function passed as a value.
    assert vm["apply"](vm["identity"], "x") == "x"
    g = vm["make_affine"](0.5, 0)
    assert g(3) == 1.5


def test_int64_overflow(values_vm):
    vm = values_vm
    for big in (INT64_MAX + 1, INT64_MIN - 1, 10**30):
        with pytest.raises(builtins.ValueError, match="int64") as info:
            vm["add"](1, big)
        assert "argument 2" in str(info.value)
    with pytest.raises(builtins.ValueError, match="argument 1"):
        vm["identity"]((1, 2**64))  # inside a tuple too
    assert vm["add"](1, 2) == 3


class _BigInt(int):
    pass


def test_int64_overflow_of_an_int_subclass(values_vm):
    with pytest.raises(builtins.ValueError, match="argument 2.*int64"):
        values_vm["add"](1, _BigInt(2**70))


def test_int_subclass_in_range(values_vm):
    assert values_vm["add"](_BigInt(40), 2) == 42


@pytest.mark.parametrize("bad", [object(), {}, {1, 2}, 1 + 2j,
                                 lambda: None], ids=lambda v: type(v).__name__)
def test_unsupported_object(values_vm, bad):
    vm = values_vm
    with pytest.raises(builtins.TypeError) as info:
        vm["pair"](1, bad)
    text = str(info.value)
    assert "argument 2" in text
    assert repr(type(bad).__name__) in text
    with pytest.raises(builtins.TypeError, match="argument 1"):
        vm["pair"](bad, 1)
    with pytest.raises(builtins.TypeError, match="argument 1"):
        vm["identity"]((1, bad))  # nested: still names the argument
    assert vm["pair"](1, 2) == (1, 2)


def test_keyword_arguments_are_refused(values_vm):
    with pytest.raises(builtins.TypeError, match="positional"):
        values_vm["add"](a=1, b=2)
    assert values_vm["add"](1, 2) == 3


def test_numpy_array_scalar_is_a_tensor(values_vm):
    out = values_vm["identity"](np.array(2.5))
    assert isinstance(out, vmjit.Tensor)
    assert out.shape == () and out.dtype == "float64"
    assert out.numpy() == 2.5


def test_numpy_scalars_are_scalars(values_vm):
    vm = values_vm
    assert vm["add"](np.int64(2), 3) == 5
    assert vm["add"](np.float64(0.5), 1) == 1.5
    out = vm["identity"](np.int32(7))
    assert type(out) is int and out == 7


def test_conversion_helper():
    back = vmjit._vmjit._to_vmjit_and_back
    assert back((1, "a", None, vmjit.Shape([1]))) == (1, "a", None, (1,))
    with pytest.raises(builtins.TypeError, match="cannot pass a 'object'"):
        back(object())


def test_a_self_referential_list_raises_recursion_error(values_vm):
    loop = [1]
    loop.append(loop)
    with pytest.raises(RecursionError):
        values_vm["identity"](loop)
    deep = ()
    for _ in range(100000):
        deep = (deep,)
    with pytest.raises(RecursionError):
        values_vm["identity"](deep)
    # A nesting within the limit still converts both ways.
    nested = ()
    for _ in range(50):
        nested = (nested, 1)
    assert values_vm["identity"](nested) == nested
