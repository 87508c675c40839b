//===- AlignedCallTest.cpp - Kernels that need aligned data ---------------===//

#include "vmjit/runtime/aligned_call.h"
#include "vmjit/runtime/any.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace vmjit;

namespace {

const DLDataType kF32{kDLFloat, 32, 1};

/// A kernel that assumes aligned data, as TVM's compiled for AVX do:
/// Out[i] = In[i] * 2 over arguments (In, Out); an unaligned one raises.
int doubleAligned(void *, const VMJITAny *Args, int32_t Num, VMJITAny *) {
  const DLTensor *In = argumentTensor(Args[0]);
  const DLTensor *Out = argumentTensor(Args[Num - 1]);
  if (!tensorDataAligned(*In) || !tensorDataAligned(*Out)) {
    VMJITErrorSetRaisedFromCStr("ValueError", "unaligned");
    return -1;
  }
  const float *X = static_cast<const float *>(In->data);
  float *Y = static_cast<float *>(Out->data);
  for (int64_t I = 0; I < In->shape[0]; ++I)
    Y[I] = X[I] * 2;
  return 0;
}

int FallbackCalls = 0;
int countedFallback(void *, const VMJITAny *, int32_t, VMJITAny *) {
  ++FallbackCalls;
  return 0;
}

/// Four floats 4 bytes past a 64-byte boundary, in `Block`.
Tensor unalignedFloats(Tensor &Block, size_t At, std::vector<float> Values) {
  float *Data = reinterpret_cast<float *>(Block.data<char>() + 64 * At + 4);
  std::memcpy(Data, Values.data(), Values.size() * sizeof(float));
  const int64_t Shape[] = {static_cast<int64_t>(Values.size())};
  return Tensor::view(Block, Data, Shape, kF32);
}

std::vector<float> values(const Tensor &T) {
  const float *P = T.data<float>();
  return std::vector<float>(P, P + T.numel());
}

int call(const std::vector<AnyView> &Args, AlignedCallKind &Kind,
         VMJITSafeCallType Fallback = nullptr) {
  Any Result;
  return callWithAlignedCopies(
      &doubleAligned, Fallback,
      reinterpret_cast<const VMJITAny *>(Args.data()),
      static_cast<int32_t>(Args.size()),
      reinterpret_cast<VMJITAny *>(&Result), Kind);
}

TEST(AlignedCallTest, TheCheckSeesUnalignedTensorsOnly) {
  Tensor Block = Tensor::empty({256}, DLDataType{kDLUInt, 8, 1});
  Tensor Aligned = Tensor::empty({4}, kF32);
  Tensor Odd = unalignedFloats(Block, 0, {1, 2, 3, 4});
  std::vector<AnyView> Args{Aligned, 7, Aligned};
  EXPECT_TRUE(tensorArgumentsAligned(
      reinterpret_cast<const VMJITAny *>(Args.data()), 3));
  Args[2] = Odd;
  EXPECT_FALSE(tensorArgumentsAligned(
      reinterpret_cast<const VMJITAny *>(Args.data()), 3));
}

TEST(AlignedCallTest, UnalignedTensorsAreCopiedInAndTheOutputBack) {
  Tensor Block = Tensor::empty({256}, DLDataType{kDLUInt, 8, 1});
  Tensor In = unalignedFloats(Block, 0, {1, 2, 3, 4});
  Tensor Out = unalignedFloats(Block, 1, {0, 0, 0, 0});
  AlignedCallKind Kind = AlignedCallKind::FellBack;
  ASSERT_EQ(call({In, Out}, Kind), 0) << takeRaisedError().message();
  EXPECT_EQ(Kind, AlignedCallKind::Copied);
  EXPECT_EQ(values(Out), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(values(In), (std::vector<float>{1, 2, 3, 4}));
}

TEST(AlignedCallTest, ArgumentsThatAliasStillAlias) {
  // In place: one copy serves both arguments.
  Tensor Block = Tensor::empty({256}, DLDataType{kDLUInt, 8, 1});
  Tensor X = unalignedFloats(Block, 0, {1, 2, 3, 4});
  AlignedCallKind Kind;
  ASSERT_EQ(call({X, X}, Kind), 0) << takeRaisedError().message();
  EXPECT_EQ(values(X), (std::vector<float>{2, 4, 6, 8}));
}

TEST(AlignedCallTest, AStridedUnalignedTensorGoesToTheFallback) {
  Tensor Block = Tensor::empty({256}, DLDataType{kDLUInt, 8, 1});
  Tensor In = unalignedFloats(Block, 0, {1, 2, 3, 4});
  DLTensor Strided = *In.dl();
  int64_t Shape[] = {2}, Strides[] = {2};
  Strided.shape = Shape;
  Strided.strides = Strides;
  Tensor Out = Tensor::empty({2}, kF32);
  FallbackCalls = 0;
  AlignedCallKind Kind = AlignedCallKind::Copied;
  EXPECT_EQ(call({&Strided, Out}, Kind, &countedFallback), 0);
  EXPECT_EQ(Kind, AlignedCallKind::FellBack);
  EXPECT_EQ(FallbackCalls, 1);
  // Without a fallback: one clear error.
  ASSERT_EQ(call({&Strided, Out}, Kind), -1);
  Error E = takeRaisedError();
  EXPECT_EQ(E.kind(), "ValueError");
  EXPECT_NE(E.message().find("argument 0"), std::string::npos) << E.message();
}

} // namespace
