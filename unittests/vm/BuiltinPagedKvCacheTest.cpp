// Tests TVM's paged KV cache (vm.builtin.paged_attention_kv_cache_create and
// the kv_state_* / attention_kv_cache_* functions) without a model: the
// attention kernels are recording stand-ins, so the tests see what the cache
// hands them. Page accounting of add, fork (inside a page, at a page
// boundary), popn (into a shared block) and remove; the page tables, lengths
// and positions of a decode over two block depths, and the order of the
// kernel calls for decode and prefill; the configurations the cache refuses
// and the functions of features it does not have. GenerateTest runs the
// real model's kernels.
#include "BuiltinTestUtil.h"

#include "vmjit/runtime/data_type.h"

#include <gmock/gmock.h>

using namespace vmjit;
using namespace vmjit::vm;
using namespace vmjit::vm::test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

/// A kernel call as the cache made it: the kernel's name, and per argument
/// its int32 elements (int32 tensors) or integer value, else nothing.
struct Call {
  std::string Kernel;
  std::vector<std::vector<int64_t>> Args;
};

struct BuiltinPagedKvCacheTest : ::testing::Test {
  Function Create = builtin("vm.builtin.paged_attention_kv_cache_create");
  Function Add = builtin("vm.builtin.kv_state_add_sequence");
  Function Remove = builtin("vm.builtin.kv_state_remove_sequence");
  Function Fork = builtin("vm.builtin.kv_state_fork_sequence");
  Function PopN = builtin("vm.builtin.kv_state_popn");
  Function Begin = builtin("vm.builtin.kv_state_begin_forward");
  Function End = builtin("vm.builtin.kv_state_end_forward");
  Function Attention =
      builtin("vm.builtin.attention_kv_cache_attention_with_fused_qkv");
  Function Available =
      builtin("vm.builtin.attention_kv_cache_get_num_available_pages");
  Function Total =
      builtin("vm.builtin.attention_kv_cache_get_total_sequence_length");
  Function Empty = builtin("vm.builtin.attention_kv_cache_empty");

  std::vector<Call> Calls;

  /// A stand-in kernel that records its calls.
  Function kernel(const std::string &Name) {
    return Function::fromPacked(Name, [this, Name](PackedArgs A, Any *) {
      Call C{Name, {}};
      for (int32_t I = 0; I < A.size(); ++I) {
        std::vector<int64_t> V;
        if (auto T = A[I].as<DLTensor *>()) {
          if ((*T)->dtype.code == kDLInt && (*T)->dtype.bits == 32 &&
              (*T)->ndim == 1) {
            auto *P = static_cast<const int32_t *>((*T)->data);
            V.assign(P, P + (*T)->shape[0]);
          }
        } else if (auto N = A[I].as<int64_t>())
          V.push_back(*N);
        C.Args.push_back(std::move(V));
      }
      Calls.push_back(std::move(C));
    });
  }
  Array tir(const std::string &Name) {
    return Array(std::vector<Any>{Any(String("tirx")), Any(kernel(Name))});
  }

  /// TVM's create arguments for 2 layers, 2 query heads, 1 KV head, head
  /// dim 4, page size 16, 128 tokens (9 pages), prefill chunk 32; `Edit`
  /// changes them before the call.
  Any create(const std::function<void(std::vector<Any> &)> &Edit = {}) {
    const DLDataType F32{kDLFloat, 32, 1};
    std::vector<Any> A = {Any(Shape{4, 128, 32, 16, 0, 1024}),
                          Any(Shape{0, 2}),
                          Any(int64_t{2}),
                          Any(int64_t{1}),
                          Any(int64_t{4}),
                          Any(int64_t{4}),
                          Any(Shape{0, 0}),
                          Any(false),
                          Any(int64_t{1}),
                          Any(1.0),
                          Any(10000.0),
                          Any(int64_t{0}),
                          Any(Tensor::empty({}, F32)),
                          Any(kernel("transpose_append")),
                          Any(),
                          Any(tir("prefill_ragged")),
                          Any(tir("prefill_paged")),
                          Any(tir("decode_paged")),
                          Any(Array(std::vector<Any>{})),
                          Any(Array(std::vector<Any>{})),
                          Any(Array(std::vector<Any>{})),
                          Any(Array(std::vector<Any>{})),
                          Any(Array(std::vector<Any>{})),
                          Any(Array(std::vector<Any>{Any(kernel("merge"))})),
                          Any(kernel("rope")),
                          Any(kernel("copy_page")),
                          Any(kernel("debug_get_kv")),
                          Any(kernel("compact_copy"))};
    if (Edit)
      Edit(A);
    std::vector<AnyView> V(A.begin(), A.end());
    return Create.callPacked(V.data(), static_cast<int32_t>(V.size()));
  }

  int64_t available(const Any &C) { return Available(C).cast<int64_t>(); }
  int64_t total(const Any &C) { return Total(C).cast<int64_t>(); }
  /// Runs one layer's attention of the open forward (N tokens).
  void attend(const Any &C, int64_t Layer, int64_t N) {
    const DLDataType F32{kDLFloat, 32, 1};
    Attention(C, Layer, 0.5, Tensor::empty({N, 4, 4}, F32),
              Tensor::empty({N, 2, 4}, F32));
  }
  std::vector<std::string> kernelNames() const {
    std::vector<std::string> N;
    for (const Call &C : Calls)
      N.push_back(C.Kernel);
    return N;
  }
};

} // namespace

TEST_F(BuiltinPagedKvCacheTest, ForksAndPopsShareAndFreePages) {
  Any C = create();
  EXPECT_EQ(typeIndexName(C.typeIndex()), "relax.vm.PagedAttentionKVCache");
  EXPECT_EQ(available(C), 9);
  Add(C, 0);
  Begin(C, Shape{0}, Shape{20});
  End(C);
  EXPECT_EQ(available(C), 7); // 20 tokens: 2 pages
  // Forked at 20, inside the second page: the first page is shared, the
  // second's first 4 tokens copied into the child's own page (per layer).
  Calls.clear();
  Fork(C, 0, 1, -1);
  EXPECT_EQ(available(C), 6);
  ASSERT_EQ(Calls.size(), 2u);
  EXPECT_EQ(Calls[0].Kernel, "copy_page");
  EXPECT_EQ(Calls[0].Args[3], std::vector<int64_t>{4});
  EXPECT_EQ(total(C), 40);
  // Popping 10 from the child reaches into the shared page: its prefix of
  // 10 tokens is copied into a page of its own.
  PopN(C, 1, 10);
  EXPECT_EQ(total(C), 30);
  EXPECT_EQ(available(C), 6);
  Remove(C, 0);
  EXPECT_EQ(available(C), 8);
  EXPECT_FALSE(Empty(C).cast<bool>());
  Remove(C, 1);
  EXPECT_EQ(available(C), 9);
  EXPECT_TRUE(Empty(C).cast<bool>());
}

TEST_F(BuiltinPagedKvCacheTest, ADecodeOverASharedPrefixUsesTwoDepths) {
  Any C = create();
  Add(C, 0);
  Begin(C, Shape{0}, Shape{16});
  End(C);
  Fork(C, 0, 1, -1); // at a page boundary: nothing copied
  Calls.clear();
  Begin(C, Shape{0, 1}, Shape{1, 1});
  attend(C, 0, 2);
  End(C);
  ASSERT_THAT(kernelNames(),
              ElementsAre("rope", "transpose_append", "decode_paged",
                          "decode_paged", "merge"));
  // rope(qkv, q positions, q, k, v, apply): both tokens at position 16.
  EXPECT_EQ(Calls[0].Args[1], (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(Calls[0].Args[5], std::vector<int64_t>{1});
  // Depth 0: the shared page, 16 tokens, RoPE offset 0, for both.
  const auto &D0 = Calls[2].Args;
  EXPECT_EQ(D0[2], (std::vector<int64_t>{0, 1, 2})); // page indptr
  EXPECT_EQ(D0[3][0], D0[3][1]);                     // the same page
  EXPECT_EQ(D0[4], (std::vector<int64_t>{16, 16}));  // last page length
  EXPECT_EQ(D0[5], (std::vector<int64_t>{0, 0}));    // RoPE offsets
  // Depth 1: each sequence's own page with its one new token, from 16.
  const auto &D1 = Calls[3].Args;
  EXPECT_EQ(D1[2], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_NE(D1[3][0], D1[3][1]);
  EXPECT_EQ(D1[4], (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(D1[5], (std::vector<int64_t>{16, 16}));
  // The new tokens go to the first slot of each own page.
  EXPECT_EQ(Calls[1].Args[3],
            (std::vector<int64_t>{D1[3][0] * 16, D1[3][1] * 16}));
  EXPECT_EQ(available(C), 9 - 3);
}

TEST_F(BuiltinPagedKvCacheTest, APrefillAttendsToItselfThenAppends) {
  Any C = create();
  Add(C, 0);
  Begin(C, Shape{0}, Shape{5});
  attend(C, 1, 5);
  End(C);
  // A first prefill has no cached pages: self-attention only.
  EXPECT_THAT(kernelNames(),
              ElementsAre("rope", "prefill_ragged", "transpose_append"));
  EXPECT_EQ(Calls[1].Args[1], (std::vector<int64_t>{0, 5})); // qo indptr
  EXPECT_EQ(Calls[0].Args[1], (std::vector<int64_t>{0, 1, 2, 3, 4}));
  Calls.clear();
  Begin(C, Shape{0}, Shape{3});
  attend(C, 0, 3);
  End(C);
  // The second one also attends over the 5 cached tokens, and merges.
  EXPECT_THAT(kernelNames(),
              ElementsAre("rope", "prefill_ragged", "prefill_paged", "merge",
                          "transpose_append"));
  EXPECT_EQ(Calls[0].Args[1], (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(Calls[2].Args[5], std::vector<int64_t>{5}); // last page length
  EXPECT_EQ(total(C), 8);
}

TEST_F(BuiltinPagedKvCacheTest, MisuseLeavesTheCacheAsItWas) {
  Any C = create();
  Add(C, 0);
  EXPECT_EQ(errorText([&] { Begin(C, Shape{0}, Shape{0}); }),
            "ValueError: vm.builtin.kv_state_begin_forward: Append with "
            "length 0 is not allowed (sequence \"0\").");
  EXPECT_EQ(errorText([&] {
              Begin(C, Shape{0, 0}, Shape{1, 1});
            }),
            "ValueError: vm.builtin.kv_state_begin_forward: The sequence "
            "\"0\" appears twice in the batch.");
  EXPECT_EQ(errorText([&] {
              Begin(C, Shape{0}, Shape{1, 2});
            }),
            "ValueError: vm.builtin.kv_state_begin_forward: The seq_ids size "
            "(1) and append_lengths size (2) mismatch.");
  EXPECT_EQ(errorText([&] { attend(C, 0, 1); }),
            "ValueError: vm.builtin.attention_kv_cache_attention_with_fused_"
            "qkv: attention needs a forward: call kv_state_begin_forward "
            "first");
  EXPECT_EQ(errorText([&] { PopN(C, 0, 1); }),
            "ValueError: vm.builtin.kv_state_popn: The sequence only has "
            "length 0, while the length of pop is 1 which exceeds the whole "
            "sequence length.");
  Begin(C, Shape{0}, Shape{2});
  attend(C, 0, 2);
  EXPECT_EQ(errorText([&] { attend(C, 0, 2); }),
            "ValueError: vm.builtin.attention_kv_cache_attention_with_fused_"
            "qkv: layer 0 already appended its K/V in this forward");
  EXPECT_EQ(errorText([&] { attend(C, 2, 2); }),
            "IndexError: vm.builtin.attention_kv_cache_attention_with_fused_"
            "qkv: layer 2 is not in the cache, which holds layers [0, 2)");
  EXPECT_EQ(errorText([&] { Fork(C, 0, 1, -1); }),
            "ValueError: vm.builtin.kv_state_fork_sequence: cannot fork a "
            "sequence between kv_state_begin_forward and "
            "kv_state_end_forward");
  End(C);
  EXPECT_EQ(errorText([&] { Fork(C, 0, 1, 3); }),
            "ValueError: vm.builtin.kv_state_fork_sequence: The forked "
            "position 3 should not exceed the total length 2 of parent "
            "sequence.");
  EXPECT_EQ(errorText([&] { Begin(C, Shape{0}, Shape{33}); }),
            "ValueError: vm.builtin.kv_state_begin_forward: the forward "
            "appends 33 tokens to sequence \"0\", more than the cache's "
            "prefill chunk size 32");
  // A pop into a shared prefix forks under the id -1 - seq: when that id is
  // taken, nothing is popped.
  Begin(C, Shape{0}, Shape{18});
  End(C);
  Fork(C, 0, 5, -1);
  Add(C, -6);
  const int64_t Pages = available(C);
  EXPECT_EQ(errorText([&] { PopN(C, 5, 10); }),
            "ValueError: vm.builtin.kv_state_popn: sequence id -6 (used "
            "internally to pop from a shared prefix) is in use");
  EXPECT_EQ(total(C), 40);
  EXPECT_EQ(available(C), Pages);
  Remove(C, -6);
  PopN(C, 5, 10);
  EXPECT_EQ(total(C), 30);
  Remove(C, 5);
  EXPECT_EQ(errorText([&] { Add(Any(int64_t{1}), 1); }),
            "TypeError: vm.builtin.kv_state_add_sequence: argument 1 expected "
            "relax.vm.PagedAttentionKVCache but got int");
  EXPECT_EQ(total(C), 20);
  EXPECT_EQ(available(C), 7);
}

TEST_F(BuiltinPagedKvCacheTest, RefusedConfigurationsSayWhat) {
  auto refused = [&](const std::function<void(std::vector<Any> &)> &Edit) {
    return errorText([&] { create(Edit); });
  };
  EXPECT_THAT(refused([](auto &A) {
                A[0] = Shape{4, 128, 32, 16, 1};
              }),
              HasSubstr("sliding-window caches are not supported"));
  EXPECT_THAT(refused([](auto &A) {
                A[6] = Shape{0, 1};
              }),
              HasSubstr("layer 1 has attention kind 1 (MLA)"));
  EXPECT_THAT(refused([](auto &A) { A[7] = Any(true); }),
              HasSubstr("KV transfer (enable_kv_transfer) is not supported"));
  EXPECT_THAT(refused([&](auto &A) {
                A[17] =
                    Array(std::vector<Any>{Any(String("flashinfer")),
                                           Any(kernel("x")), Any(kernel("y"))});
              }),
              HasSubstr("argument 18 (decode) uses FlashInfer kernels"));
  EXPECT_THAT(refused([](auto &A) { A[16] = Array(std::vector<Any>{}); }),
              HasSubstr("argument 17 (prefill) is empty"));
  EXPECT_THAT(refused([](auto &A) { A[23] = Array(std::vector<Any>{}); }),
              HasSubstr("Merge inplace function is not defined."));
  EXPECT_THAT(refused([](auto &A) {
                A[0] = Shape{4, int64_t{1} << 40, 32, 16, 0};
              }),
              HasSubstr("too large: token positions must fit int32"));
  EXPECT_THAT(refused([](auto &A) {
                A[8] = Any(int64_t{2});
                A[11] = Tensor::empty({2}, DLDataType{kDLFloat, 32, 1});
              }),
              HasSubstr("The RoPE mode must be normal"));
  EXPECT_THAT(refused([](auto &A) { A.pop_back(); }),
              HasSubstr("expected 28 to 29 arguments but got 27"));
}

TEST_F(BuiltinPagedKvCacheTest, FeaturesItDoesNotHaveGiveTVMsErrors) {
  Any C = create();
  Add(C, 0);
  EXPECT_EQ(errorText([&] {
              builtin("vm.builtin.attention_kv_cache_enable_sliding_window_"
                      "for_seq")(C, 0, 8, 2);
            }),
            "ValueError: vm.builtin.attention_kv_cache_enable_sliding_window_"
            "for_seq: The KV cache does not support sliding window.");
  EXPECT_THAT(errorText([&] { Begin(C, Shape{0}, Shape{1}, Shape{-1}); }),
              HasSubstr("token trees (token_tree_parent_ptr) are not "
                        "supported"));
  EXPECT_THAT(errorText([&] {
                builtin("vm.builtin.attention_kv_cache_merge_attn_output_"
                        "inplace")(C, Tensor(), Tensor(), Tensor(), Tensor());
              }),
              HasSubstr("TypeError")); // undefined tensors are not tensors
  // The model gave one merge kernel: the general merge (the second) is
  // missing.
  Tensor T = Tensor::empty({1, 2, 4}, DLDataType{kDLFloat, 32, 1});
  EXPECT_EQ(errorText([&] {
              builtin("vm.builtin.attention_kv_cache_merge_attn_output_"
                      "inplace")(C, T, T, T, T);
            }),
            "ValueError: vm.builtin.attention_kv_cache_merge_attn_output_"
            "inplace: The general attention merge function is not defined.");
  // prepare_recv begins a forward and says where its tokens go, as
  // segments of consecutive positions: pages 0 and 2 here (sequence 2
  // holds page 1).
  for (int64_t Seq : {1, 2}) {
    Add(C, Seq);
    Begin(C, Shape{Seq}, Shape{1});
    End(C);
  }
  Remove(C, 1);
  Shape Where = builtin("vm.builtin.kv_cache_disagg_prepare_recv")(C, 0, 20)
                    .cast<Shape>();
  EXPECT_THAT(Where.dims(), ElementsAre(2, 0, 16, 32, 4));
  End(C);
}
