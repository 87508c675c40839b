//===- builtins_tensor.cpp - Tensor views, shapes and copies ---------------===//
//
// vm.builtin.shape_of, reshape, tensor_to_shape, ensure_zero_offset and
// to_device (CPU to CPU), with TVM's arguments.
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"

#include <fmt/format.h>
#include <limits>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// shape_of(tensor): its shape (a Tensor or a DLTensor pointer).
Shape shapeOf(DLTensor *T) {
  return Shape(std::vector<int64_t>(T->shape, T->shape + T->ndim));
}

/// reshape(tensor, shape): a view of the same memory with a new shape
/// (TVM's CreateView: the tensor must be compact, and the view may not be
/// larger than it).
Tensor reshape(Tensor X, Shape NewShape) {
  const char *Fn = "vm.builtin.reshape";
  if (!X.isContiguous())
    fail(Fn, fmt::format("cannot view a strided tensor of shape {}",
                         shapeString(X.shape())));
  const uint64_t Have = X.nbytes();
  // Elements (none: more than a tensor can have, by the one rule for
  // shapes), then bytes (sub-byte elements packed, as the tensor's own).
  for (int64_t D : NewShape)
    if (D < 0)
      fail(Fn, fmt::format("negative dimension in shape {}",
                           shapeString(NewShape.dims())));
  const std::optional<uint64_t> Elems =
      tensorElementCount(NewShape.dims(), X.dtype());
  const uint64_t Want = Elems ? tensorDataBytes(*Elems, X.dtype())
                              : std::numeric_limits<uint64_t>::max();
  if (Want > Have)
    fail(Fn, fmt::format("a {} view of shape {} needs {} bytes, but the "
                         "tensor of shape {} has {}",
                         dtypeName(X.dtype()), shapeString(NewShape.dims()),
                         Want, shapeString(X.shape()), Have));
  return Tensor::view(X, X.data(), NewShape.dims(), X.dtype(), X.device());
}

/// tensor_to_shape(tensor): the shape whose dimensions are the elements of
/// a rank-1 int16, int32 or int64 tensor.
Shape tensorToShape(Tensor X) {
  const char *Fn = "vm.builtin.tensor_to_shape";
  if (X.ndim() != 1)
    fail(Fn, fmt::format("expected a rank-1 tensor but got shape {}",
                         shapeString(X.shape())));
  const DLDataType T = X.dtype();
  if (T.code != kDLInt || T.lanes != 1 ||
      (T.bits != 16 && T.bits != 32 && T.bits != 64))
    fail(Fn,
         fmt::format("expected an int16, int32 or int64 tensor but got {}",
                     dtypeName(T)),
         "TypeError");
  needCpu(Fn, X, "the tensor");
  const int64_t N = X.shape()[0];
  const int64_t Stride = X.dl()->strides ? X.dl()->strides[0] : 1;
  const char *Base = static_cast<const char *>(X.data());
  std::vector<int64_t> Dims(static_cast<size_t>(N));
  for (int64_t I = 0; I < N; ++I) {
    const char *P = Base + I * Stride * static_cast<int64_t>(T.bits / 8);
    switch (T.bits) {
    case 16:
      Dims[static_cast<size_t>(I)] = *reinterpret_cast<const int16_t *>(P);
      break;
    case 32:
      Dims[static_cast<size_t>(I)] = *reinterpret_cast<const int32_t *>(P);
      break;
    default:
      Dims[static_cast<size_t>(I)] = *reinterpret_cast<const int64_t *>(P);
      break;
    }
  }
  return Shape(std::move(Dims));
}

/// A compact copy of X on the CPU device `Dev`.
Tensor copyOf(const Tensor &X, DLDevice Dev) {
  Tensor Out = Tensor::empty(X.shape(), X.dtype(), Dev);
  copyElements(X, Out.data());
  return Out;
}

/// ensure_zero_offset(tensor): the tensor with byte_offset 0. A tensor
/// that already has it is returned as is; one whose offset is a multiple
/// of 64 becomes a view starting at its data (CPU pointers allow the
/// arithmetic); otherwise, or when it is strided, a compact copy.
Tensor ensureZeroOffset(Tensor X) {
  const char *Fn = "vm.builtin.ensure_zero_offset";
  if (X.dl()->byte_offset == 0)
    return X;
  needCpu(Fn, X, "the tensor");
  if (X.isContiguous() && X.dl()->byte_offset % kTensorAlignment == 0)
    return Tensor::view(X, X.data(), X.shape(), X.dtype(), X.device());
  return copyOf(X, X.device());
}

/// to_device(tensor, device type, device id [, scope]): a copy on that
/// device. Only the CPU (device type 1) is supported, with the "global"
/// scope; the copy is always new, as in TVM.
Tensor toDevice(Tensor X, int64_t DeviceType, int64_t DeviceId,
                std::optional<std::string> Scope) {
  const char *Fn = "vm.builtin.to_device";
  if (DeviceType != kDLCPU)
    fail(Fn, fmt::format("cannot copy to device type {}: only the CPU "
                         "(device type 1) is supported",
                         DeviceType));
  if (DeviceId < 0 || DeviceId > std::numeric_limits<int32_t>::max())
    fail(Fn, fmt::format("device id {} is out of range", DeviceId));
  if (Scope && !Scope->empty() && *Scope != "global")
    fail(Fn, fmt::format("memory scope '{}' is not supported: CPU tensors "
                         "have only the \"global\" scope",
                         *Scope));
  needCpu(Fn, X, "the source tensor");
  return copyOf(X, cpuDevice(static_cast<int>(DeviceId)));
}

} // namespace

void registerTensorBuiltins(GlobalDef &D) {
  D.def("vm.builtin.shape_of", shapeOf)
      .def("vm.builtin.reshape", reshape)
      .def("vm.builtin.tensor_to_shape", tensorToShape)
      .def("vm.builtin.ensure_zero_offset", ensureZeroOffset)
      .def("vm.builtin.to_device", toDevice);
}

} // namespace vmjit::vm::builtin
