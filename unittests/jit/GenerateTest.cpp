// Tests of TVM's paged KV cache (vm.builtin.paged_attention_kv_cache_create,
// kv_state_*, attention_kv_cache_*) through the generate loop of
// ../shared/tvm-models/llm (examples/generate/llm_generate.h), in every
// mode: TVM's tokens and logits; sequences interleaved, forked (at a page
// boundary: two block depths merged; inside a page: a copied page and a
// prefill over a shared prefix) and popped give their own tokens; misuse
// gives an error and leaves the cache working; 1000 generations leave no
// memory behind (the ASan/LSan stage runs this binary). Skipped when
// ../shared is absent.
#include "CallErrors.h"
#include "llm_generate.h"

#include "vmjit/jit/tier_manager.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using vmjit::jittest::errorText;

namespace {

const std::filesystem::path kLlm =
    std::filesystem::path(VMJIT_TVM_MODELS) / "llm";

double maxError(const std::vector<float> &A, const std::vector<float> &B) {
  if (A.size() != B.size())
    return INFINITY;
  double M = 0;
  for (size_t I = 0; I < A.size(); ++I)
    M = std::max(M, double(std::fabs(A[I] - B[I])));
  return M;
}

class GenerateTest : public ::testing::TestWithParam<ExecMode> {
protected:
  void SetUp() override {
    if (!std::filesystem::exists(kLlm / "model.so"))
      GTEST_SKIP() << "no TVM model at " << kLlm;
    if (GetParam() == ExecMode::Baseline && !jit::baselineAvailable())
      GTEST_SKIP() << "this build has no baseline tier";
    G = std::make_unique<llm::Generator>(kLlm, [](VirtualMachine &VM) {
      jit::JITOptions J;
      J.Mode = GetParam();
      J.Threshold = 1;
      J.Background = false;
      jit::enableJIT(VM, J);
    });
    Prompt = G->ints("prompt.npy");
    Tokens = G->ints("tokens.npy");
  }

  /// The tokens a fresh cache generates for `P` alone.
  std::vector<int32_t> alone(const std::vector<int32_t> &P, int Count) {
    return G->generate(G->newCache(), 0, P, Count);
  }

  std::unique_ptr<llm::Generator> G;
  std::vector<int32_t> Prompt, Tokens;
};

TEST_P(GenerateTest, TokensAndLogitsAreTVMs) {
  std::vector<std::vector<float>> Steps;
  Any Cache = G->newCache();
  EXPECT_EQ(G->generate(Cache, 0, Prompt, 16, &Steps), Tokens);
  ASSERT_EQ(Steps.size(), 16u);
  for (int K = 0; K < 16; ++K)
    EXPECT_LE(maxError(Steps[static_cast<size_t>(K)], G->tvmLogits(K)), 1e-5)
        << "step " << K;
  // prompt + 15 decoded tokens are cached.
  EXPECT_EQ(G->TotalLength(Cache).cast<int64_t>(), 8 + 15);
}

TEST_P(GenerateTest, TwoInterleavedSequencesKeepTheirOwnTokens) {
  std::vector<int32_t> Other(Prompt.rbegin(), Prompt.rend());
  std::vector<int32_t> WantOther = alone(Other, 10);
  Any Cache = G->newCache();
  std::vector<int32_t> A{llm::Generator::argmax(G->start(Cache, 0, Prompt))};
  std::vector<int32_t> B{llm::Generator::argmax(G->start(Cache, 7, Other))};
  while (B.size() < 10) {
    A.push_back(
        llm::Generator::argmax(G->step(Cache, 0, {A.back()}, "decode")));
    B.push_back(
        llm::Generator::argmax(G->step(Cache, 7, {B.back()}, "decode")));
  }
  EXPECT_EQ(A, std::vector<int32_t>(Tokens.begin(), Tokens.begin() + 10));
  EXPECT_EQ(B, WantOther);
  G->RemoveSequence(Cache, 0);
  G->RemoveSequence(Cache, 7);
  EXPECT_TRUE(llm::globalFunc("vm.builtin.attention_kv_cache_empty")(Cache)
                  .cast<bool>());
}

TEST_P(GenerateTest, AForkContinuesLikeItsParent) {
  // 16 tokens fill one page: the fork shares it (block depth 0) and each
  // sequence decodes into its own block (depth 1); the decode merges both.
  std::vector<int32_t> Long = Prompt;
  Long.insert(Long.end(), Prompt.rbegin(), Prompt.rend());
  std::vector<int32_t> Want = alone(Long, 8);
  Any Cache = G->newCache();
  std::vector<float> First = G->start(Cache, 0, Long);
  G->ForkSequence(Cache, 0, 1, -1);
  std::vector<int32_t> A{llm::Generator::argmax(First)}, B = A;
  while (A.size() < 8) {
    A.push_back(
        llm::Generator::argmax(G->step(Cache, 0, {A.back()}, "decode")));
    B.push_back(
        llm::Generator::argmax(G->step(Cache, 1, {B.back()}, "decode")));
  }
  EXPECT_EQ(A, Want);
  EXPECT_EQ(B, Want);

  // Forked inside the page (position 12): the child copies the shared part
  // of the page, and its prefill of the last 4 tokens attends over the
  // shared prefix too.
  G->ForkSequence(Cache, 0, 2, 12);
  std::vector<int32_t> Rest(Long.begin() + 12, Long.end());
  std::vector<float> Logits = G->step(Cache, 2, Rest, "prefill");
  EXPECT_LE(maxError(Logits, First), 1e-5);
  EXPECT_EQ(llm::Generator::argmax(Logits), Want[0]);
}

TEST_P(GenerateTest, CachedKVReadsBackByPosition) {
  // attention_kv_cache_debug_get_kv: (layers, positions, kv heads, dim).
  Function GetKV =
      llm::globalFunc("vm.builtin.attention_kv_cache_debug_get_kv");
  const DLDataType F32{kDLFloat, 32, 1};
  auto kv = [&](const Any &Cache, int64_t Seq, int64_t Begin, int64_t End) {
    Tensor K = Tensor::empty({2, End - Begin, 4, 16}, F32);
    Tensor V = Tensor::empty({2, End - Begin, 4, 16}, F32);
    GetKV(Cache, Seq, Begin, End, K, V);
    const float *P = K.data<float>(), *Q = V.data<float>();
    std::vector<float> Out(P, P + K.numel());
    Out.insert(Out.end(), Q, Q + V.numel());
    return Out;
  };
  /// Positions [Begin, End) of layer L's K from a (2, N, 4, 16) read.
  auto slice = [](const std::vector<float> &All, int64_t N, int L,
                  int64_t Begin, int64_t End) {
    const size_t Row = 4 * 16;
    auto First = All.begin() + static_cast<long>((L * N + Begin) * Row);
    return std::vector<float>(First,
                              First + static_cast<long>((End - Begin) * Row));
  };
  Any Cache = G->newCache();
  G->generate(Cache, 0, Prompt, 16); // 23 tokens: two pages
  std::vector<float> All = kv(Cache, 0, 0, 23);
  std::vector<float> Part = kv(Cache, 0, 14, 19); // across the page boundary
  for (int L = 0; L < 2; ++L)
    EXPECT_EQ(slice(Part, 5, L, 0, 5), slice(All, 23, L, 14, 19)) << L;
  EXPECT_NE(slice(All, 23, 1, 0, 1), slice(All, 23, 1, 1, 2));
  // A child forked inside the second page has the same first 20 tokens
  // (the shared page and a copy of the partly shared one).
  G->ForkSequence(Cache, 0, 1, 20);
  std::vector<float> Child = kv(Cache, 1, 0, 20);
  for (int L = 0; L < 2; ++L)
    EXPECT_EQ(slice(Child, 20, L, 0, 20), slice(All, 23, L, 0, 20)) << L;
}

TEST_P(GenerateTest, PoppedTokensAreDecodedAgain) {
  Any Cache = G->newCache();
  std::vector<int32_t> Got = G->generate(Cache, 0, Prompt, 12);
  // Drop the last 5 decoded tokens and decode from the 7th again.
  G->PopN(Cache, 0, 5);
  EXPECT_EQ(G->TotalLength(Cache).cast<int64_t>(), 8 + 11 - 5);
  std::vector<int32_t> Again(Got.begin(), Got.begin() + 7);
  while (Again.size() < 12)
    Again.push_back(
        llm::Generator::argmax(G->step(Cache, 0, {Again.back()}, "decode")));
  EXPECT_EQ(Again, Got);
}

TEST_P(GenerateTest, MisuseGivesAnErrorAndLeavesTheCacheWorking) {
  Any Cache = G->newCache();
  auto begin = [&](int64_t Seq, int64_t N) {
    G->BeginForward(Cache, Shape{Seq}, Shape{N});
  };
  EXPECT_EQ(errorText([&] { begin(3, 1); }),
            "ValueError: vm.builtin.kv_state_begin_forward: The sequence \"3\" "
            "cannot be found in KV cache.");
  EXPECT_EQ(errorText([&] { G->EndForward(Cache); }),
            "ValueError: vm.builtin.kv_state_end_forward: "
            "kv_state_end_forward without kv_state_begin_forward: no forward "
            "is open");
  G->AddSequence(Cache, 3);
  EXPECT_EQ(errorText([&] { G->AddSequence(Cache, 3); }),
            "ValueError: vm.builtin.kv_state_add_sequence: The sequence \"3\" "
            "is already in the KV cache.");
  begin(3, 1);
  EXPECT_EQ(errorText([&] { begin(3, 1); }),
            "ValueError: vm.builtin.kv_state_begin_forward: "
            "kv_state_begin_forward was called again before "
            "kv_state_end_forward closed the last forward");
  EXPECT_EQ(errorText([&] { G->RemoveSequence(Cache, 3); }),
            "ValueError: vm.builtin.kv_state_remove_sequence: cannot remove a "
            "sequence between kv_state_begin_forward and "
            "kv_state_end_forward");
  G->EndForward(Cache);
  G->RemoveSequence(Cache, 3);
  EXPECT_EQ(errorText([&] { G->RemoveSequence(Cache, 3); }),
            "ValueError: vm.builtin.kv_state_remove_sequence: The sequence "
            "\"3\" cannot be found in KV cache.");
  // Over capacity: 17 pages of 16 tokens; 4 forwards of 64 use 16 pages.
  G->AddSequence(Cache, 4);
  for (int I = 0; I < 4; ++I) {
    begin(4, 64);
    G->EndForward(Cache);
  }
  EXPECT_EQ(errorText([&] { begin(4, 64); }),
            "ValueError: vm.builtin.kv_state_begin_forward: The KV cache is "
            "full. No page can be allocated (the forward needs 4 more pages "
            "of 16 tokens, 1 are free).");
  EXPECT_EQ(errorText([&] { begin(4, 65); }),
            "ValueError: vm.builtin.kv_state_begin_forward: the forward "
            "appends 65 tokens to sequence \"4\", more than the cache's "
            "prefill chunk size 64");
  EXPECT_EQ(G->TotalLength(Cache).cast<int64_t>(), 256);
  G->RemoveSequence(Cache, 4);
  // Nothing was corrupted: the cache generates TVM's tokens.
  EXPECT_EQ(G->generate(Cache, 0, Prompt, 16), Tokens);
}

TEST_P(GenerateTest, DecodeWithoutBeginForwardFailsAtTheAttention) {
  Any Cache = G->newCache();
  std::vector<int32_t> Got = G->generate(Cache, 0, Prompt, 2);
  Any H = G->embed({Got.back()});
  Error E("NoError", "no error");
  try {
    G->forward("decode", H, Cache);
  } catch (const Error &Err) {
    E = Err;
  }
  EXPECT_EQ(E.kind() + ": " + E.message(),
            "ValueError: vm.builtin.attention_kv_cache_attention_with_fused_"
            "qkv: attention needs a forward: call kv_state_begin_forward "
            "first");
  EXPECT_NE(E.format().find("in function 'decode', instruction 35"),
            std::string::npos)
      << E.format();
  // Nothing was appended: the generation goes on with TVM's tokens.
  EXPECT_EQ(G->TotalLength(Cache).cast<int64_t>(), 8 + 1);
  while (Got.size() < 16)
    Got.push_back(
        llm::Generator::argmax(G->step(Cache, 0, {Got.back()}, "decode")));
  EXPECT_EQ(Got, Tokens);
}

TEST_P(GenerateTest, AThousandGenerationsLeaveNothingBehind) {
  for (int I = 0; I < 1000; ++I) {
    Any Cache = G->newCache();
    std::vector<int32_t> Got = G->generate(Cache, 0, Prompt, 16);
    if (Got != Tokens)
      FAIL() << "generation " << I << " differs";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMode, GenerateTest,
                         ::testing::ValuesIn(kAllExecModes),
                         [](const auto &Info) {
                           return std::string(execModeName(Info.param));
                         });

} // namespace
