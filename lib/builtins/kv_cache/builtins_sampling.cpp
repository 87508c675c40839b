//===- builtins_sampling.cpp - Token sampling and logit processing --------===//
//
// The sampling builtins of Apache TVM's lm_support.cc:
// vm.builtin.sample_top_p_from_logits, sample_top_p_from_prob,
// multinomial_from_uniform, and the in-place logit passes
// apply_repetition_penalty, apply_presence_and_frequency_penalty and
// apply_softmax_with_temperature. They compute in float32 with TVM's
// order of operations, so they draw the same tokens; tensors must be
// compact and on the CPU, and indices are checked before anything is
// written.
//
//===----------------------------------------------------------------------===//

#include "../builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <utility>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// A compact CPU tensor of element type `Want` (TypeError for another
/// type, ValueError for a strided or non-CPU one) of rank >= 1.
void needCompact(const char *Fn, const Tensor &T, DLDataType Want,
                 std::string_view What) {
  if (T.dtype() != Want)
    fail(Fn,
         fmt::format("{} must be {} but is {}", What, dtypeName(Want),
                     dtypeName(T.dtype())),
         "TypeError");
  needCpu(Fn, T, What);
  if (!T.isContiguous())
    fail(Fn, fmt::format("{} must be compact (it is strided)", What));
  if (T.ndim() < 1)
    fail(Fn, fmt::format("{} must have rank 1 or more", What));
}

/// The last dimension of a tensor whose other dimensions are all 1 (one
/// row of logits or probabilities); it must not be empty.
int64_t oneRow(const char *Fn, const Tensor &T, std::string_view What) {
  for (int64_t D : T.shape().first(static_cast<size_t>(T.ndim() - 1)))
    if (D != 1)
      fail(Fn, fmt::format("the leading dimensions of {} must be 1, but its "
                           "shape is {}",
                           What, shapeString(T.shape())));
  const int64_t N = T.shape().back();
  if (N == 0)
    fail(Fn, fmt::format("{} are empty", What));
  return N;
}

using Scored = std::pair<float, int64_t>;

/// Sorts by score, largest first; equal scores keep the lower index first
/// (a stable sort, written as a total order).
void sortDescending(std::vector<Scored> &V) {
  std::sort(V.begin(), V.end(), [](const Scored &A, const Scored &B) {
    if (A.first != B.first)
      return A.first > B.first;
    return A.second < B.second;
  });
}

/// sample_top_p_from_logits(logits, temperature, top_p, uniform sample):
/// the token drawn from softmax(logits / temperature) restricted to the
/// smallest prefix (by probability) whose sum reaches top_p; argmax when
/// the temperature is below 1e-6.
int64_t sampleTopPFromLogits(Tensor Logits, double Temperature, double TopP,
                             double Uniform) {
  const char *Fn = "vm.builtin.sample_top_p_from_logits";
  needCompact(Fn, Logits, dtype::Float32, "the logits");
  const int64_t N = oneRow(Fn, Logits, "the logits");
  const float *L = Logits.data<float>();
  std::vector<Scored> Data(static_cast<size_t>(N));
  for (int64_t I = 0; I < N; ++I) {
    if (std::isnan(L[I]))
      fail(Fn, fmt::format("logit {} is NaN", I));
    Data[static_cast<size_t>(I)] = {L[I], I};
  }
  sortDescending(Data);
  if (Temperature < 1e-6f)
    return Data[0].second;
  // float arithmetic throughout, as TVM does it.
  const float Scale = static_cast<float>(1.0f / Temperature);
  const float Max = Data[0].first;
  float Sum = 0.0f;
  for (Scored &S : Data) {
    S.first = std::exp((S.first - Max) * Scale);
    Sum += S.first;
  }
  float Cum = 0.0f, TopPSum = 0.0f;
  for (Scored &S : Data) {
    const float P = S.first / Sum;
    if (Cum < TopP)
      TopPSum += P;
    Cum += P;
    S.first = Cum;
  }
  for (const Scored &S : Data)
    if (Uniform < S.first / TopPSum)
      return S.second;
  if (!(Uniform <= Data[0].first))
    fail(Fn, fmt::format("no token was drawn for the uniform sample {}; it "
                         "must be in [0, 1)",
                         Uniform));
  return Data[0].second;
}

/// One attempt of sample_top_p_from_prob over the probabilities >= Cutoff;
/// -1 when they do not reach top_p (and the cutoff was not 0) or there are
/// none.
int64_t sampleAbove(const float *P, int64_t N, float Cutoff, double TopP,
                    double Uniform, std::vector<Scored> &Data) {
  Data.clear();
  for (int64_t I = 0; I < N; ++I)
    if (P[I] >= Cutoff)
      Data.emplace_back(P[I], I);
  if (Data.empty())
    return -1;
  sortDescending(Data);
  // The sum below never exceeds top_p, so this draw is the argmax.
  if (Uniform < Data[0].first / TopP)
    return Data[0].second;
  float Cum = 0.0f, TopPSum = 0.0f;
  for (Scored &S : Data) {
    if (!(Cum < TopP))
      break;
    TopPSum += S.first;
    Cum += S.first;
    S.first = Cum;
  }
  if (Cum < TopP && Cutoff != 0.0f)
    return -1;
  for (const Scored &S : Data)
    if (Uniform < S.first / TopPSum)
      return S.second;
  return Data.back().second;
}

/// sample_top_p_from_prob(prob, top_p, uniform sample): the token drawn
/// from the probabilities restricted to the smallest prefix that reaches
/// top_p. With top_p < 1 only probabilities >= top_p / 1024 are sorted
/// first, as in TVM; all of them when those do not reach top_p.
int64_t sampleTopPFromProb(Tensor Prob, double TopP, double Uniform) {
  const char *Fn = "vm.builtin.sample_top_p_from_prob";
  needCompact(Fn, Prob, dtype::Float32, "the probabilities");
  const int64_t N = oneRow(Fn, Prob, "the probabilities");
  const float *P = Prob.data<float>();
  std::vector<Scored> Data;
  if (TopP < 1) {
    Data.reserve(128);
    int64_t Token =
        sampleAbove(P, N, static_cast<float>(TopP / 1024), TopP, Uniform, Data);
    if (Token >= 0)
      return Token;
  }
  Data.reserve(static_cast<size_t>(N));
  int64_t Token = sampleAbove(P, N, 0.0f, TopP, Uniform, Data);
  if (Token >= 0)
    return Token;
  if (std::all_of(P, P + N, [](float X) { return std::isnan(X); }))
    fail(Fn, "the probabilities are all NaN; cannot sample from them");
  fail(Fn, "cannot sample: every probability is negative or NaN");
}

/// multinomial_from_uniform(prob [batch, vocab], uniform [batch] or
/// [batch, 1]): for each row the first token whose cumulative probability
/// exceeds the row's uniform sample (the last token when none does), as
/// an int64 [batch, 1] tensor.
Tensor multinomialFromUniform(Tensor Prob, Tensor Uniform) {
  const char *Fn = "vm.builtin.multinomial_from_uniform";
  needCompact(Fn, Prob, dtype::Float32, "the probabilities");
  needCompact(Fn, Uniform, dtype::Float32, "the uniform samples");
  if (Prob.ndim() != 2 || Prob.shape()[1] == 0)
    fail(Fn, fmt::format("the probabilities must have shape [batch, vocab] "
                         "with vocab > 0, not {}",
                         shapeString(Prob.shape())));
  const int64_t Batch = Prob.shape()[0], Vocab = Prob.shape()[1];
  if (Uniform.numel() != Batch)
    fail(Fn, fmt::format("there must be one uniform sample per row ({}), "
                         "but their shape is {}",
                         Batch, shapeString(Uniform.shape())));
  const float *P = Prob.data<float>();
  const float *U = Uniform.data<float>();
  Tensor Out = Tensor::empty({Batch, 1}, dtype::Int64);
  int64_t *O = Out.data<int64_t>();
  for (int64_t B = 0; B < Batch; ++B) {
    const float *Row = P + B * Vocab;
    float Cum = 0.0f;
    int64_t Token = Vocab - 1;
    for (int64_t J = 0; J < Vocab; ++J) {
      Cum += Row[J];
      if (Cum > U[B]) {
        Token = J;
        break;
      }
    }
    O[B] = Token;
  }
  return Out;
}

/// The token ids of a penalty: the first `last dimension` int32 elements,
/// each an index of the logits (IndexError otherwise).
std::pair<const int32_t *, int64_t>
tokenIds(const char *Fn, const Tensor &Logits, const Tensor &Ids) {
  needCompact(Fn, Ids, dtype::Int32, "the token ids");
  const int64_t N = Ids.shape().back();
  const int32_t *I = Ids.data<int32_t>();
  const int64_t Size = Logits.numel();
  for (int64_t K = 0; K < N; ++K)
    if (I[K] < 0 || I[K] >= Size)
      fail(Fn,
           fmt::format("token id {} (element {}) is out of range for {} "
                       "logits",
                       I[K], K, Size),
           "IndexError");
  return {I, N};
}

/// apply_repetition_penalty(logits, token ids, penalty), in place: each
/// listed token's logit is multiplied by the penalty when <= 0, divided by
/// it otherwise.
void applyRepetitionPenalty(Tensor Logits, Tensor Ids, double Penalty) {
  const char *Fn = "vm.builtin.apply_repetition_penalty";
  needCompact(Fn, Logits, dtype::Float32, "the logits");
  auto [I, N] = tokenIds(Fn, Logits, Ids);
  float *L = Logits.data<float>();
  for (int64_t K = 0; K < N; ++K) {
    float &X = L[I[K]];
    if (X <= 0)
      X = static_cast<float>(X * Penalty);
    else
      X = static_cast<float>(X / Penalty);
  }
}

/// apply_presence_and_frequency_penalty(logits, token ids, token freqs,
/// presence penalty, frequency penalty), in place: logit[id] -= freq *
/// frequency penalty + presence penalty.
void applyPresenceAndFrequencyPenalty(Tensor Logits, Tensor Ids, Tensor Freqs,
                                      double Presence, double Frequency) {
  const char *Fn = "vm.builtin.apply_presence_and_frequency_penalty";
  needCompact(Fn, Logits, dtype::Float32, "the logits");
  auto [I, N] = tokenIds(Fn, Logits, Ids);
  needCompact(Fn, Freqs, dtype::Int32, "the token frequencies");
  if (Freqs.shape().back() != N)
    fail(Fn, fmt::format("there are {} token ids but the frequencies have "
                         "shape {}",
                         N, shapeString(Freqs.shape())));
  float *L = Logits.data<float>();
  const int32_t *F = Freqs.data<int32_t>();
  for (int64_t K = 0; K < N; ++K)
    L[I[K]] = static_cast<float>(L[I[K]] - (F[K] * Frequency + Presence));
}

/// apply_softmax_with_temperature(logits, temperature), in place: each row
/// (last dimension) becomes softmax(logits / temperature), computed online
/// in one pass for the maximum and the sum as TVM does.
void applySoftmaxWithTemperature(Tensor Logits, double Temperature) {
  const char *Fn = "vm.builtin.apply_softmax_with_temperature";
  needCompact(Fn, Logits, dtype::Float32, "the logits");
  if (!(Temperature > 0))
    fail(Fn, fmt::format("the temperature must be > 0, not {}", Temperature));
  const int64_t Vocab = Logits.shape().back();
  if (Vocab == 0)
    return;
  const int64_t Rows = Logits.numel() / Vocab;
  const float InvTemp = static_cast<float>(1.0f / Temperature);
  for (int64_t R = 0; R < Rows; ++R) {
    float *L = Logits.data<float>() + R * Vocab;
    // The lowest finite float, so that a -inf logit adds exp(-inf) = 0
    // (TVM starts at the smallest positive float, see tvm-builtins.md).
    float M = std::numeric_limits<float>::lowest();
    double D = 0.0;
    for (int64_t I = 0; I < Vocab; ++I) {
      const float X = L[I] * InvTemp;
      const float Prev = M;
      M = std::max(M, X);
      D = D * std::exp(Prev - M) + std::exp(X - M);
    }
    for (int64_t I = 0; I < Vocab; ++I)
      L[I] = static_cast<float>(std::exp(L[I] * InvTemp - M) / D);
  }
}

} // namespace

void registerSamplerBuiltins(GlobalDef &D) {
  D.def("vm.builtin.sample_top_p_from_logits", sampleTopPFromLogits)
      .def("vm.builtin.sample_top_p_from_prob", sampleTopPFromProb)
      .def("vm.builtin.multinomial_from_uniform", multinomialFromUniform)
      .def("vm.builtin.apply_repetition_penalty", applyRepetitionPenalty)
      .def("vm.builtin.apply_presence_and_frequency_penalty",
           applyPresenceAndFrequencyPenalty)
      .def("vm.builtin.apply_softmax_with_temperature",
           applySoftmaxWithTemperature);
}

} // namespace vmjit::vm::builtin
