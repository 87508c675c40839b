//===- builtins_view.cpp - runtime.TVMTensorCreateView --------------------===//
//
// runtime.TVMTensorCreateView(tensor, shape, dtype, relative byte offset),
// what TVM lowers R.memory.view to (Apache TVM's Tensor::CreateView): a
// tensor of another shape and element type over the same memory, starting
// that many bytes further in. The view keeps the tensor alive and has its
// data pointer with the byte offset added to the byte_offset field, as in
// TVM (vm.builtin.ensure_zero_offset then folds or copies it).
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"

#include <fmt/format.h>
#include <limits>

namespace vmjit::vm::builtin {
namespace {

/// Bytes of a compact tensor of `Shape` and `T` as tvm-ffi's GetDataSize
/// counts them (all bits back to back, rounded up to a byte); nullopt on
/// overflow or a negative dimension.
std::optional<uint64_t> dataBytes(std::span<const int64_t> Shape,
                                  DLDataType T) {
  constexpr uint64_t Max = std::numeric_limits<uint64_t>::max();
  uint64_t Bits = uint64_t(T.bits) * T.lanes;
  for (int64_t D : Shape) {
    if (D < 0)
      return std::nullopt;
    if (D && Bits > Max / uint64_t(D))
      return std::nullopt;
    Bits *= uint64_t(D);
  }
  if (Bits > Max - 7)
    return std::nullopt;
  return (Bits + 7) / 8;
}

/// TVMTensorCreateView(tensor, shape, dtype, relative byte offset).
Tensor createView(Tensor X, Shape Dims, DLDataType T, int64_t Offset) {
  const char *Fn = "runtime.TVMTensorCreateView";
  if (!X.isContiguous())
    fail(Fn, fmt::format("can only view a compact tensor, but the tensor of "
                         "shape {} is strided",
                         shapeString(X.shape())));
  for (int64_t D : Dims)
    if (D < 0)
      fail(Fn, fmt::format("negative dimension in the view shape {}",
                           shapeString(Dims.dims())));
  if (T.bits == 0 || T.lanes == 0)
    fail(Fn, fmt::format("cannot view memory as elements of type {}",
                         dtypeName(T)));
  if (Offset < 0)
    fail(Fn, fmt::format("the relative byte offset {} is negative", Offset));
  const uint64_t Have = *dataBytes(X.shape(), X.dtype());
  const std::optional<uint64_t> Want = dataBytes(Dims.dims(), T);
  if (!Want || *Want > Have || uint64_t(Offset) > Have - *Want)
    fail(Fn, fmt::format("a view of shape {} as {} at byte offset {} needs {} "
                         "bytes, but the tensor of shape {} ({}) has {}",
                         shapeString(Dims.dims()), dtypeName(T), Offset,
                         Want ? fmt::format("{}", *Want) : "too many",
                         shapeString(X.shape()), dtypeName(X.dtype()), Have));
  Tensor V = Tensor::view(X, X.dl()->data, Dims.dims(), T, X.device());
  V.dl()->byte_offset = X.dl()->byte_offset + uint64_t(Offset);
  return V;
}

} // namespace

void registerViewBuiltins(GlobalDef &D) {
  D.def("runtime.TVMTensorCreateView", createView);
}

} // namespace vmjit::vm::builtin
