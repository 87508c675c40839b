//===- BindTestKernels.h - Kernels for binding tests ------------*- C++ -*-===//
//
// What the binding tests (unittests/vm/BindParamsTest.cpp and, in every
// mode, unittests/jit/BindParamsModesTest.cpp) share: small float32 kernels
// registered in C++ as a kernel library, their hand-made effects, a count
// of the transposes run, and tensors to call them on.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_VM_BINDTESTKERNELS_H
#define VMJIT_UNITTESTS_VM_BINDTESTKERNELS_H

#include "vmjit/runtime/error.h"
#include "vmjit/runtime/library.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/bind_params.h"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit::bindtest {

/// Transposes run so far (k.transpose counts each call).
inline std::atomic<int> &transposes() {
  static std::atomic<int> N{0};
  return N;
}

inline float *f32(const Tensor &T) { return T.data<float>(); }

/// k.transpose(in[r,c], out[c,r]), k.neg(in, out), k.add(a, b, out),
/// k.scale2(x) (doubles x in place), k.fail(in, out) (always an error).
inline std::shared_ptr<KernelLibrary> testKernels() {
  std::map<std::string, Function, std::less<>> F;
  F["k.transpose"] =
      Function::fromTyped("k.transpose", [](Tensor In, Tensor Out) {
        ++transposes();
        const int64_t R = In.shape()[0], C = In.shape()[1];
        for (int64_t I = 0; I < R; ++I)
          for (int64_t J = 0; J < C; ++J)
            f32(Out)[J * R + I] = f32(In)[I * C + J];
      });
  F["k.neg"] = Function::fromTyped("k.neg", [](Tensor In, Tensor Out) {
    for (int64_t I = 0; I < In.numel(); ++I)
      f32(Out)[I] = -f32(In)[I];
  });
  F["k.add"] = Function::fromTyped("k.add", [](Tensor A, Tensor B, Tensor Out) {
    for (int64_t I = 0; I < A.numel(); ++I)
      f32(Out)[I] = f32(A)[I] + f32(B)[I];
  });
  F["k.scale2"] = Function::fromTyped("k.scale2", [](Tensor X) {
    for (int64_t I = 0; I < X.numel(); ++I)
      f32(X)[I] *= 2;
  });
  F["k.fail"] = Function::fromTyped("k.fail", [](Tensor, Tensor) {
    throwError("ValueError", "k.fail always fails");
  });
  return KernelLibrary::fromFunctions("bind-test-kernels", std::move(F), {},
                                      nullptr);
}

/// The kernels' effects, as the kernel tier would prove them.
inline std::map<std::string, KernelEffects, std::less<>> kernelEffects() {
  const ArgAccess R = ArgAccess::Read, W = ArgAccess::Write;
  return {{"k.transpose", {true, {R, W}}},
          {"k.neg", {true, {R, W}}},
          {"k.add", {true, {R, R, W}}},
          {"k.scale2", {true, {ArgAccess::ReadWrite}}},
          {"k.fail", {true, {R, W}}}};
}

/// A lookup of `Effects`.
inline vm::KernelEffectsLookup
lookupOf(std::map<std::string, KernelEffects, std::less<>> Effects) {
  return [E = std::move(Effects)](
             std::string_view Name) -> std::optional<KernelEffects> {
    auto It = E.find(Name);
    if (It == E.end())
      return std::nullopt;
    return It->second;
  };
}

/// A float32 tensor of `Shape` holding First, First + 1, ...
inline Tensor iota(std::vector<int64_t> Shape, float First) {
  Tensor T = Tensor::empty(Shape, dtype::Float32);
  for (int64_t I = 0; I < T.numel(); ++I)
    f32(T)[I] = First + static_cast<float>(I);
  return T;
}

/// The elements of a float32 tensor.
inline std::vector<float> values(const Tensor &T) {
  return std::vector<float>(f32(T), f32(T) + T.numel());
}

/// `Body` (vmasm functions) after the constants the test programs share:
/// float32 and uint8, the global scope, 64 bytes of storage, shape [3, 2].
inline std::string withConstants(std::string_view Body) {
  return R"(
.const $f32 = dtype float32
.const $u8 = dtype uint8
.const $global = str "global"
.const $bytes = shape [64]
.const $s32 = shape [3, 2]
)" + std::string(Body);
}

/// main(x[3,2], w[2,3]): x + transpose(w) (the transpose the one foldable
/// call when w is bound).
inline const std::string kTransposeAdd = withConstants(R"(
.func main(x, w)
  %st = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %t = call vm.builtin.alloc_tensor(%st, 0, $s32, $f32)
  call k.transpose(%w, %t)
  %st2 = call vm.builtin.alloc_storage(%vm, $bytes, 0, $u8, $global)
  %o = call vm.builtin.alloc_tensor(%st2, 0, $s32, $f32)
  call k.add(%x, %t, %o)
  %t = call vm.builtin.null_value()
  ret %o
.end
)");

} // namespace vmjit::bindtest

#endif // VMJIT_UNITTESTS_VM_BINDTESTKERNELS_H
