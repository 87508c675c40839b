// Tests the sampling builtins of TVM's lm_support.cc:
// sample_top_p_from_logits and sample_top_p_from_prob (which token a
// uniform sample draws, top-p cut-offs, argmax at temperature 0),
// multinomial_from_uniform, and the in-place logit passes (repetition,
// presence and frequency penalties, softmax with temperature), with their
// type, shape, device and index errors.
#include "BuiltinTestUtil.h"

#include "vmjit/runtime/data_type.h"

#include <cmath>
#include <gmock/gmock.h>
#include <limits>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;

namespace {

Tensor f32(std::vector<int64_t> Shape, std::vector<float> V) {
  return tensorOf<float>(std::move(Shape), std::move(V), dtype::Float32);
}
Tensor i32(std::vector<int64_t> Shape, std::vector<int32_t> V) {
  return tensorOf<int32_t>(std::move(Shape), std::move(V), dtype::Int32);
}

/// Logits whose softmax (temperature 1) is {0.5, 0.25, 0.125, 0.125} for
/// tokens {2, 0, 3, 1}.
Tensor logits() {
  const float L = std::log(0.125f);
  return f32({1, 4}, {std::log(0.25f), L, std::log(0.5f), L});
}

} // namespace

TEST(BuiltinSamplingTest, TopPFromLogitsDrawsByCumulativeProbability) {
  Function F = builtin("vm.builtin.sample_top_p_from_logits");
  // Sorted: token 2 (0.5), 0 (0.25), 1 (0.125), 3 (0.125); ties keep the
  // lower token first. Cumulative: 0.5, 0.75, 0.875, 1.
  EXPECT_EQ(F(logits(), 1.0, 1.0, 0.1).cast<int64_t>(), 2);
  EXPECT_EQ(F(logits(), 1.0, 1.0, 0.6).cast<int64_t>(), 0);
  EXPECT_EQ(F(logits(), 1.0, 1.0, 0.8).cast<int64_t>(), 1);
  EXPECT_EQ(F(logits(), 1.0, 1.0, 0.9).cast<int64_t>(), 3);
  // top_p 0.7: tokens 2 and 0 (sum 0.75) are kept, renormalized.
  EXPECT_EQ(F(logits(), 1.0, 0.7, 0.6).cast<int64_t>(), 2);
  EXPECT_EQ(F(logits(), 1.0, 0.7, 0.7).cast<int64_t>(), 0);
  EXPECT_EQ(F(logits(), 1.0, 0.7, 0.99).cast<int64_t>(), 0);
  // Temperature below 1e-6: argmax whatever the sample.
  EXPECT_EQ(F(logits(), 0.0, 0.9, 0.99).cast<int64_t>(), 2);
  // A high temperature flattens: 0.3 draws the second token.
  EXPECT_EQ(F(logits(), 100.0, 1.0, 0.3).cast<int64_t>(), 0);
  // Rank 1 and -inf logits (masked tokens) are fine.
  const float Inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(F(f32({3}, {-Inf, 1, -Inf}), 1.0, 1.0, 0.99).cast<int64_t>(), 1);
}

TEST(BuiltinSamplingTest, TopPFromLogitsErrors) {
  Function F = builtin("vm.builtin.sample_top_p_from_logits");
  EXPECT_EQ(errorText([&] {
              F(f32({2, 2}, {1, 2, 3, 4}), 1.0, 1.0, 0.5);
            }),
            "ValueError: vm.builtin.sample_top_p_from_logits: the leading "
            "dimensions of the logits must be 1, but its shape is [2, 2]");
  EXPECT_EQ(errorText([&] {
              F(tensorOf<double>({2}, {1, 2}, dtype::Float64), 1.0, 1.0, 0.5);
            }),
            "TypeError: vm.builtin.sample_top_p_from_logits: the logits must "
            "be float32 but is float64");
  EXPECT_EQ(errorText([&] {
              F(f32({1, 0}, {}), 1.0, 1.0, 0.5);
            }),
            "ValueError: vm.builtin.sample_top_p_from_logits: the logits are "
            "empty");
  EXPECT_EQ(errorText([&] { F(f32({}, {1}), 1.0, 1.0, 0.5); }),
            "ValueError: vm.builtin.sample_top_p_from_logits: the logits must "
            "have rank 1 or more");
  EXPECT_EQ(errorText([&] {
              F(f32({2}, {1, std::nanf("")}), 1.0, 1.0, 0.5);
            }),
            "ValueError: vm.builtin.sample_top_p_from_logits: logit 1 is NaN");
  // A sample of 1 draws nothing (TVM's failed check).
  EXPECT_EQ(errorText([&] { F(logits(), 1.0, 1.0, 1.0); }),
            "ValueError: vm.builtin.sample_top_p_from_logits: no token was "
            "drawn for the uniform sample 1; it must be in [0, 1)");
  Tensor Owner = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(
      errorText([&] { F(importedView(Owner, 0, {2}, {2}), 1.0, 1.0, 0.5); }),
      "ValueError: vm.builtin.sample_top_p_from_logits: the logits must "
      "be compact (it is strided)");
  EXPECT_EQ(errorText([&] { F(logits(), 1.0, 1.0); }),
            "TypeError: vm.builtin.sample_top_p_from_logits: expected 4 "
            "arguments but got 3");
}

TEST(BuiltinSamplingTest, TopPFromProb) {
  Function F = builtin("vm.builtin.sample_top_p_from_prob");
  Tensor P = f32({1, 4}, {0.25f, 0.125f, 0.5f, 0.125f});
  EXPECT_EQ(F(P, 1.0, 0.1).cast<int64_t>(), 2);
  EXPECT_EQ(F(P, 1.0, 0.6).cast<int64_t>(), 0);
  EXPECT_EQ(F(P, 1.0, 0.8).cast<int64_t>(), 1);
  EXPECT_EQ(F(P, 1.0, 0.9).cast<int64_t>(), 3);
  // top_p 0.7: 2 and 0 are kept (sum 0.75). A sample below 0.5 / 0.7
  // draws the argmax at once (TVM's shortcut, so 0.7 draws token 2 here
  // where sample_top_p_from_logits draws 0); above it, token 0.
  EXPECT_EQ(F(P, 0.7, 0.6).cast<int64_t>(), 2);
  EXPECT_EQ(F(P, 0.7, 0.7).cast<int64_t>(), 2);
  EXPECT_EQ(F(P, 0.7, 0.72).cast<int64_t>(), 0);
  EXPECT_EQ(F(P, 0.7, 0.99).cast<int64_t>(), 0);
  // The cut-off filter (top_p / 1024) drops tiny probabilities, and the
  // full fallback finds the rest when those do not reach top_p.
  // None of these is >= 0.5 / 1024, so all are sorted (3e-4, 2e-4, 1e-4)
  // and renormalized: cumulative 0.5, 0.83, 1.
  Tensor Tiny = f32({3}, {0.0001f, 0.0002f, 0.0003f});
  EXPECT_EQ(F(Tiny, 0.5, 0.4).cast<int64_t>(), 2);
  EXPECT_EQ(F(Tiny, 0.5, 0.6).cast<int64_t>(), 1);
  EXPECT_EQ(F(Tiny, 0.5, 0.99).cast<int64_t>(), 0);
  // NaN probabilities are skipped; all NaN is an error.
  const float NaN = std::nanf("");
  EXPECT_EQ(F(f32({3}, {NaN, 1, NaN}), 0.9, 0.5).cast<int64_t>(), 1);
  EXPECT_EQ(errorText([&] {
              F(f32({2}, {NaN, NaN}), 0.9, 0.5);
            }),
            "ValueError: vm.builtin.sample_top_p_from_prob: the probabilities "
            "are all NaN; cannot sample from them");
  EXPECT_EQ(errorText([&] {
              F(f32({2}, {-1, NaN}), 0.9, 0.5);
            }),
            "ValueError: vm.builtin.sample_top_p_from_prob: cannot sample: "
            "every probability is negative or NaN");
  EXPECT_EQ(errorText([&] {
              F(i32({2}, {1, 2}), 0.9, 0.5);
            }),
            "TypeError: vm.builtin.sample_top_p_from_prob: the probabilities "
            "must be float32 but is int32");
}

TEST(BuiltinSamplingTest, MultinomialFromUniform) {
  Function F = builtin("vm.builtin.multinomial_from_uniform");
  Tensor P = f32({3, 3}, {0.2f, 0.3f, 0.5f, 1, 0, 0, 0, 0, 0});
  Tensor U = f32({3, 1}, {0.45f, 0.0f, 0.5f});
  Tensor Out = F(P, U).cast<Tensor>();
  EXPECT_EQ(Out.dtype(), dtype::Int64);
  EXPECT_THAT(std::vector<int64_t>(Out.shape().begin(), Out.shape().end()),
              ElementsAre(3, 1));
  // Row 0: 0.2, 0.5 > 0.45 -> 1; row 1: 1 > 0 -> 0; row 2 never exceeds:
  // the last token.
  EXPECT_EQ(valuesOf<int64_t>(Out), (std::vector<int64_t>{1, 0, 2}));
  // Samples of shape [batch] work too.
  EXPECT_EQ(
      valuesOf<int64_t>(F(P, f32({3}, {0.1f, 0.5f, 0.5f})).cast<Tensor>()),
      (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(errorText([&] {
              F(P, f32({2}, {0.1f, 0.2f}));
            }),
            "ValueError: vm.builtin.multinomial_from_uniform: there must be "
            "one uniform sample per row (3), but their shape is [2]");
  EXPECT_EQ(errorText([&] {
              F(f32({3}, {1, 0, 0}), f32({1}, {0.5f}));
            }),
            "ValueError: vm.builtin.multinomial_from_uniform: the "
            "probabilities must have shape [batch, vocab] with vocab > 0, not "
            "[3]");
  EXPECT_EQ(errorText([&] {
              F(P, i32({3}, {0, 0, 0}));
            }),
            "TypeError: vm.builtin.multinomial_from_uniform: the uniform "
            "samples must be float32 but is int32");
}

TEST(BuiltinSamplingTest, RepetitionPenaltyInPlace) {
  Function F = builtin("vm.builtin.apply_repetition_penalty");
  Tensor L = f32({1, 4}, {2, -2, 4, 0.5f});
  EXPECT_TRUE(F(L, i32({1, 2}, {0, 1}), 2.0).isNone());
  // Positive logits are divided, the others multiplied.
  EXPECT_EQ(valuesOf<float>(L), (std::vector<float>{1, -4, 4, 0.5f}));
  // A repeated id is penalized twice.
  F(L, i32({2}, {2, 2}), 2.0);
  EXPECT_EQ(valuesOf<float>(L), (std::vector<float>{1, -4, 1, 0.5f}));
  // Out of range: nothing changes.
  EXPECT_EQ(errorText([&] {
              F(L, i32({2}, {3, 4}), 2.0);
            }),
            "IndexError: vm.builtin.apply_repetition_penalty: token id 4 "
            "(element 1) is out of range for 4 logits");
  EXPECT_EQ(errorText([&] { F(L, i32({1}, {-1}), 2.0); }),
            "IndexError: vm.builtin.apply_repetition_penalty: token id -1 "
            "(element 0) is out of range for 4 logits");
  EXPECT_EQ(valuesOf<float>(L), (std::vector<float>{1, -4, 1, 0.5f}));
  EXPECT_EQ(
      errorText([&] { F(L, tensorOf<int64_t>({1}, {0}, dtype::Int64), 2.0); }),
      "TypeError: vm.builtin.apply_repetition_penalty: the token ids "
      "must be int32 but is int64");
}

TEST(BuiltinSamplingTest, PresenceAndFrequencyPenaltyInPlace) {
  Function F = builtin("vm.builtin.apply_presence_and_frequency_penalty");
  Tensor L = f32({1, 4}, {1, 1, 1, 1});
  EXPECT_TRUE(F(L, i32({2}, {1, 3}), i32({2}, {1, 3}), 0.5, 0.25).isNone());
  // logit -= freq * 0.25 + 0.5
  EXPECT_EQ(valuesOf<float>(L), (std::vector<float>{1, 0.25f, 1, -0.25f}));
  EXPECT_EQ(errorText([&] {
              F(L, i32({2}, {1, 3}), i32({1}, {1}), 0.5, 0.25);
            }),
            "ValueError: vm.builtin.apply_presence_and_frequency_penalty: "
            "there are 2 token ids but the frequencies have shape [1]");
  EXPECT_EQ(errorText([&] { F(L, i32({1}, {9}), i32({1}, {1}), 0.5, 0.25); }),
            "IndexError: vm.builtin.apply_presence_and_frequency_penalty: "
            "token id 9 (element 0) is out of range for 4 logits");
  EXPECT_EQ(valuesOf<float>(L), (std::vector<float>{1, 0.25f, 1, -0.25f}));
}

TEST(BuiltinSamplingTest, SoftmaxWithTemperatureInPlace) {
  Function F = builtin("vm.builtin.apply_softmax_with_temperature");
  Tensor L = f32({1, 3}, {1, 2, 3});
  EXPECT_TRUE(F(L, 2.0).isNone());
  // softmax([0.5, 1, 1.5])
  const double E0 = std::exp(0.5), E1 = std::exp(1.0), E2 = std::exp(1.5);
  const double S = E0 + E1 + E2;
  EXPECT_THAT(valuesOf<float>(L),
              ElementsAre(FloatNear(static_cast<float>(E0 / S), 1e-6f),
                          FloatNear(static_cast<float>(E1 / S), 1e-6f),
                          FloatNear(static_cast<float>(E2 / S), 1e-6f)));
  // Every row, and very negative or masked logits (TVM gives NaN for a row
  // whose logits are all below about -87).
  const float Inf = std::numeric_limits<float>::infinity();
  Tensor Rows = f32({2, 2}, {-200, -200, -Inf, 0});
  F(Rows, 1.0);
  EXPECT_EQ(valuesOf<float>(Rows), (std::vector<float>{0.5f, 0.5f, 0, 1}));
  EXPECT_EQ(errorText([&] { F(L, 0.0); }),
            "ValueError: vm.builtin.apply_softmax_with_temperature: the "
            "temperature must be > 0, not 0");
  EXPECT_EQ(errorText([&] { F(i32({1}, {1}), 1.0); }),
            "TypeError: vm.builtin.apply_softmax_with_temperature: the logits "
            "must be float32 but is int32");
}

TEST(BuiltinSamplingTest, OnlyCpuTensors) {
  // A DLPack import of device memory is refused before it is read.
  Tensor Host = f32({1, 2}, {1, 2});
  struct Ctx {
    Tensor Keep;
    int64_t Shape[2] = {1, 2};
  };
  auto *M = new DLManagedTensor{};
  auto *C = new Ctx{Host};
  M->dl_tensor.data = Host.data();
  M->dl_tensor.device = DLDevice{kDLCUDA, 0};
  M->dl_tensor.ndim = 2;
  M->dl_tensor.dtype = dtype::Float32;
  M->dl_tensor.shape = C->Shape;
  M->manager_ctx = C;
  M->deleter = [](DLManagedTensor *Self) {
    delete static_cast<Ctx *>(Self->manager_ctx);
    delete Self;
  };
  Tensor Device = Tensor::fromDLPack(M);
  EXPECT_THAT(errorText([&] {
                builtin("vm.builtin.apply_softmax_with_temperature")(Device,
                                                                     1.0);
              }),
              HasSubstr("ValueError: vm.builtin.apply_softmax_with_"
                        "temperature: the logits is on device type 2; only "
                        "CPU tensors are supported"));
}
