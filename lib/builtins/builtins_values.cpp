//===- builtins_values.cpp - copy, null_value, read_if_cond, tuples --------===//
//
// vm.builtin.copy, null_value, read_if_cond, make_tuple, tuple_getitem and
// tuple_reset_item, with Apache TVM's argument conventions (the JIT inlines
// copy, read_if_cond on ints and bools, and tuple_getitem in range; these
// are the slow paths it falls back to).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"

#include <fmt/format.h>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// copy(x): x itself (a tensor is not duplicated, as in TVM).
Any copy(AnyView X) { return Any(X); }

/// null_value(): None.
std::nullptr_t nullValue() { return nullptr; }

/// read_if_cond(c): an int or bool is true when non-zero; a tensor of int,
/// uint or bool elements, of any rank, by its first element (as TVM reads
/// it). Floats, float tensors and other values are errors.
bool readIfCond(AnyView C) {
  const char *Fn = "vm.builtin.read_if_cond";
  const VMJITAny &V = C.raw();
  if (V.type_index == kVMJITInt || V.type_index == kVMJITBool)
    return V.v_int64 != 0;
  auto T = C.as<DLTensor *>();
  if (!T)
    fail(Fn,
         fmt::format("the condition must be an int, a bool or an "
                     "int/uint/bool tensor, not {}",
                     C.typeName()),
         "TypeError");
  const DLTensor &D = **T;
  const DLDataType DT = D.dtype;
  if (DT.code != kDLInt && DT.code != kDLUInt && DT.code != kDLBool)
    fail(Fn,
         fmt::format("the condition tensor must be int, uint or bool, not {}",
                     dtypeName(DT)),
         "TypeError");
  if (DT.bits != 1 && DT.bits != 8 && DT.bits != 16 && DT.bits != 32 &&
      DT.bits != 64)
    fail(Fn, fmt::format("cannot read a condition of type {}", dtypeName(DT)),
         "TypeError");
  if (D.device.device_type != kDLCPU)
    fail(Fn, fmt::format("the condition tensor is on device type {}; only "
                         "CPU tensors are supported",
                         static_cast<int>(D.device.device_type)));
  for (int I = 0; I < D.ndim; ++I)
    if (D.shape[I] <= 0)
      fail(Fn, "the condition tensor is empty");
  const char *P = static_cast<const char *>(D.data) + D.byte_offset;
  bool Nonzero = false;
  for (size_t B = 0; B < (DT.bits + 7u) / 8u; ++B)
    Nonzero |= P[B] != 0;
  return Nonzero;
}

/// make_tuple(x...): a tuple of the arguments.
void makeTuple(PackedArgs A, Any *Rv) {
  *Rv = Array(std::span<const AnyView>(A.data(), static_cast<size_t>(A.size())));
}

void checkIndex(const char *Fn, const Array &T, int64_t I) {
  // TVM does not wrap negative indices either.
  if (I < 0 || I >= static_cast<int64_t>(T.size()))
    fail(Fn,
         fmt::format("index {} is out of range for a tuple of {} elements", I,
                     T.size()),
         "IndexError");
}

/// tuple_getitem(tuple, index): one element.
Any tupleGetItem(Array T, int64_t I) {
  checkIndex("vm.builtin.tuple_getitem", T, I);
  return T[static_cast<size_t>(I)];
}

/// tuple_reset_item(tuple, index): sets the element to None in place (TVM
/// uses it to release a tuple's element after its last use; every holder
/// of the tuple sees the change).
void tupleResetItem(Array T, int64_t I) {
  checkIndex("vm.builtin.tuple_reset_item", T, I);
  // The elements live in the array's own (non-const) storage.
  const_cast<Any &>(T[static_cast<size_t>(I)]).reset();
}

} // namespace

void registerValueBuiltins(GlobalDef &D) {
  D.def("vm.builtin.copy", copy)
      .def("vm.builtin.null_value", nullValue)
      .def("vm.builtin.read_if_cond", readIfCond)
      .defPacked("vm.builtin.make_tuple", makeTuple)
      .def("vm.builtin.tuple_getitem", tupleGetItem)
      .def("vm.builtin.tuple_reset_item", tupleResetItem);
}

} // namespace vmjit::vm::builtin
