//===- SameBits.h - Results compared bit for bit ----------------*- C++ -*-===//
//
// What the kernel-tier tests compare: every tensor of two results (a tensor
// or a tuple of them, nested), shape and bytes. Shared by KernelTierTest and
// KernelAotTest.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_SAMEBITS_H
#define VMJIT_UNITTESTS_JIT_SAMEBITS_H

#include "vmjit/runtime/any.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/tensor.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <vector>

namespace vmjit::jittest {

/// The tensors of a result (a tensor or a tuple of them, nested), in order.
inline void flatten(const Any &V, std::vector<Tensor> &Out) {
  if (auto T = V.as<Tensor>()) {
    Out.push_back(*T);
    return;
  }
  if (auto A = V.as<Array>())
    for (size_t I = 0; I < A->size(); ++I)
      flatten((*A)[I], Out);
}

/// Whether `A` and `B` hold the same tensors, bit for bit.
inline ::testing::AssertionResult sameBits(const Any &A, const Any &B) {
  std::vector<Tensor> TA, TB;
  flatten(A, TA);
  flatten(B, TB);
  if (TA.empty() || TA.size() != TB.size())
    return ::testing::AssertionFailure()
           << TA.size() << " against " << TB.size() << " tensors";
  for (size_t I = 0; I < TA.size(); ++I) {
    const Tensor &X = TA[I], &Y = TB[I];
    if (!std::equal(X.shape().begin(), X.shape().end(), Y.shape().begin(),
                    Y.shape().end()) ||
        X.nbytes() != Y.nbytes())
      return ::testing::AssertionFailure() << "tensor " << I << ": shapes";
    if (std::memcmp(X.data(), Y.data(), X.nbytes()) != 0)
      return ::testing::AssertionFailure()
             << "tensor " << I << ": the bits differ";
  }
  return ::testing::AssertionSuccess();
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_SAMEBITS_H
