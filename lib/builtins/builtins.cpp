//===- builtins.cpp - Registering vm.builtin.*; what the families share ---===//
//
// The builtins themselves live in builtins_*.cpp, one file per family;
// docs/tvm-builtins.md lists them with their arguments and where vmjit
// differs from Apache TVM on purpose.
//
//===----------------------------------------------------------------------===//

#include "vmjit/builtins/builtins.h"
#include "builtins_internal.h"
#include "vmjit/kernels/standard_library.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"

#include <cstring>
#include <fmt/format.h>
#include <mutex>

namespace vmjit::vm {
namespace builtin {

void fail(const char *Fn, std::string_view Msg, const char *Kind) {
  throwError(Kind, fmt::format("{}: {}", Fn, Msg));
}

void throwArgCountError(const char *Fn, const PackedArgs &A, int32_t Min,
                        int32_t Max) {
  if (Min == Max)
    detail::throwArityError(Fn, Min, A.size());
  if (Max != INT32_MAX)
    detail::throwArityError(Fn, Min, Max, A.size());
  fail(Fn,
       fmt::format("expected at least {} argument{} but got {}", Min,
                   Min == 1 ? "" : "s", A.size()),
       "TypeError");
}

std::string ErrorContext::prefix() const {
  if (Text.empty())
    return {};
  return std::string(Text) + ": ";
}

int64_t &ShapeHeap::slot(const char *Fn, int64_t Index) const {
  if (!Data)
    fail(Fn, fmt::format("heap slot {} is used but the shape heap is null",
                         Index));
  if (Index < 0 || Index >= Size)
    fail(Fn,
         fmt::format("heap slot {} is out of range (heap of {})", Index, Size),
         "IndexError");
  return Data[Index];
}

std::optional<ShapeHeap> asShapeHeap(const AnyView &V) noexcept {
  if (V.isNone())
    return ShapeHeap{};
  std::optional<DLTensor *> H = V.as<DLTensor *>();
  if (!H)
    return std::nullopt;
  const DLTensor *T = *H;
  if (T->dtype != dtype::Int64 || T->ndim != 1 ||
      (T->strides && T->shape[0] > 1 && T->strides[0] != 1) ||
      T->device.device_type != kDLCPU)
    return std::nullopt;
  return ShapeHeap{reinterpret_cast<int64_t *>(static_cast<char *>(T->data) +
                                               T->byte_offset),
                   T->shape[0]};
}

ShapeHeap heapArg(const char *Fn, const AnyView &V, int32_t I) {
  if (std::optional<ShapeHeap> H = asShapeHeap(V))
    return *H;
  if (!V.as<DLTensor *>())
    detail::throwArgTypeError(Fn, I + 1, "Tensor (the shape heap) or None",
                              V);
  fail(Fn, fmt::format("argument {} must be the int64 shape heap", I + 1),
       "TypeError");
}

std::optional<std::span<const int64_t>> dimsOf(const AnyView &V) {
  if (auto T = V.as<DLTensor *>())
    return std::span<const int64_t>((*T)->shape,
                                    static_cast<size_t>((*T)->ndim));
  if (V.typeIndex() == kVMJITShape)
    return static_cast<const ShapeObj *>(Object::fromRaw(V.raw().v_obj))
        ->dims();
  return std::nullopt;
}

} // namespace builtin

void copyElements(const Tensor &Src, void *Dst) {
  const size_t Elem = dtypeBytes(Src.dtype());
  if (Src.isContiguous()) {
    if (Src.nbytes())
      std::memcpy(Dst, Src.data(), Src.nbytes());
    return;
  }
  // Strided elements of a packed type share bytes: no copy can be made
  // by moving bytes, and no builtin computes on their bits.
  if (!isByteAligned(Src.dtype()))
    throwError("ValueError",
               fmt::format("cannot copy a strided {} tensor (its elements are "
                           "packed, several to a byte)",
                           dtypeName(Src.dtype())));
  // Strided: walk the indices in row-major order like an odometer.
  const int NDim = Src.ndim();
  const int64_t *Shape = Src.dl()->shape;
  const int64_t *Strides = Src.dl()->strides;
  const int64_t N = Src.numel();
  std::vector<int64_t> Index(static_cast<size_t>(NDim), 0);
  const char *Base = static_cast<const char *>(Src.data());
  char *Out = static_cast<char *>(Dst);
  int64_t Offset = 0; // in elements, from the strides
  for (int64_t K = 0; K < N; ++K) {
    std::memcpy(Out + static_cast<size_t>(K) * Elem,
                Base + Offset * static_cast<int64_t>(Elem), Elem);
    for (int D = NDim - 1; D >= 0; --D) {
      if (++Index[static_cast<size_t>(D)] < Shape[D]) {
        Offset += Strides[D];
        break;
      }
      Offset -= Strides[D] * (Shape[D] - 1);
      Index[static_cast<size_t>(D)] = 0;
    }
  }
}

namespace builtin {

void needCpu(const char *Fn, const Tensor &T, std::string_view What) {
  if (T.device().device_type != kDLCPU)
    fail(Fn, fmt::format("{} is on device type {}; only CPU tensors are "
                         "supported",
                         What, static_cast<int>(T.device().device_type)));
}

} // namespace builtin

void registerVMBuiltins(Registry &R) {
  GlobalDef D(R);
  builtin::registerValueBuiltins(D);
  builtin::registerClosureBuiltins(D);
  builtin::registerShapeBuiltins(D);
  builtin::registerCheckBuiltins(D);
  builtin::registerStorageBuiltins(D);
  builtin::registerTensorBuiltins(D);
  builtin::registerKVCacheBuiltins(D);
  builtin::registerPagedKVCacheBuiltins(D);
  builtin::registerSamplerBuiltins(D);
  builtin::registerSortBuiltins(D);
  builtin::registerViewBuiltins(D);
  builtin::registerDebugBuiltins(D);
}

namespace {
const Registry &standardVMBuiltins() {
  // Never destroyed, as the global registry: a JIT thread may look a
  // function up while the process exits.
  static Registry *R = [] {
    auto *S = new Registry();
    registerVMBuiltins(*S);
    return S;
  }();
  return *R;
}
} // namespace

std::optional<Function> standardFunction(std::string_view Name) {
  if (std::optional<Function> F = standardVMBuiltins().find(Name))
    return F;
  return kernels::standardKernels().find(Name);
}

void registerVMBuiltins() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    Registry::global().addDefaults(standardVMBuiltins());
    builtin::registerCheckTvmAbiVariants(standardVMBuiltins());
    kernels::registerStandardKernels();
  });
}

} // namespace vmjit::vm
