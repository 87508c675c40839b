//===- builtins_paged_kv_cache.cpp - TVM's paged KV cache functions -------===//
//
// vm.builtin.paged_attention_kv_cache_create and the global functions TVM
// registers for its KV states (kv_state.cc): vm.builtin.kv_state_* and
// vm.builtin.attention_kv_cache_* of the paged cache (paged_kv_cache.h),
// one GlobalDef line each. Functions of features the cache refuses at
// creation (sliding windows, KV transfer, MLA) give TVM's error for a cache
// without them.
//
//===----------------------------------------------------------------------===//

#include "../builtins_internal.h"
#include "paged_kv_cache.h"

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/string.h"

#include <fmt/format.h>
#include <limits>

namespace vmjit::vm::builtin {
namespace {

constexpr const char *kCreate = "vm.builtin.paged_attention_kv_cache_create";

/// A kernel of the TIR backend, from TVM's backend tuple ("tirx", f); an
/// empty tuple gives an undefined Function. Required kernels must be set.
Function backendKernel(const PackedArgs &A, int32_t I, const char *What,
                       bool Required) {
  Array Spec = arg<Array>(kCreate, A, I);
  if (Spec.size() == 0) {
    if (Required)
      fail(kCreate, fmt::format("argument {} ({}) is empty: the cache needs "
                                "this attention kernel",
                                I + 1, What));
    return Function();
  }
  auto Backend = Spec[0].as<std::string_view>();
  if (Backend && *Backend == "flashinfer")
    fail(kCreate,
         fmt::format("argument {} ({}) uses FlashInfer kernels; vmjit runs "
                     "the TIR (\"tirx\") kernels on the CPU",
                     I + 1, What));
  auto F = Spec.size() == 2 ? Spec[1].as<Function>() : std::nullopt;
  if (!Backend || *Backend != "tirx" || !F)
    fail(kCreate, fmt::format("argument {} ({}) must be (\"tirx\", kernel) "
                              "or empty",
                              I + 1, What));
  return *F;
}

/// Argument I as a Function, or an undefined one for None/anything else
/// when `Optional`.
Function functionArg(const PackedArgs &A, int32_t I, bool Optional) {
  if (auto F = A[I].as<Function>())
    return *F;
  if (Optional)
    return Function();
  return arg<Function>(kCreate, A, I);
}

int64_t positiveArg(const PackedArgs &A, int32_t I, const char *What) {
  int64_t V = arg<int64_t>(kCreate, A, I);
  if (V <= 0)
    fail(kCreate, fmt::format("argument {} ({}) must be positive, got {}",
                              I + 1, What, V));
  return V;
}

/// The configuration from arguments 0-12 (TVM's order).
KVCacheConfig configOf(const PackedArgs &A) {
  Shape Cfg = arg<Shape>(kCreate, A, 0);
  if (Cfg.size() != 5 && Cfg.size() != 6)
    fail(kCreate, "KV cache config must contain five legacy fields and an "
                  "optional per-layer sliding window size.");
  for (int64_t V : Cfg.dims().first(4))
    if (V <= 0)
      fail(kCreate, fmt::format("the cache config {} must have positive "
                                "(max batch size, max total sequence "
                                "length, prefill chunk size, page size)",
                                shapeString(Cfg.dims())));
  if (Cfg[4] != 0)
    fail(kCreate, "sliding-window caches are not supported by vmjit's paged "
                  "KV cache (config field 4, support_sliding_window, is 1)");
  Shape LayerIndptr = arg<Shape>(kCreate, A, 1);
  if (LayerIndptr.size() != 2 || LayerIndptr[0] < 0 ||
      LayerIndptr[1] <= LayerIndptr[0])
    fail(kCreate, fmt::format("the layer indptr {} must be [begin, end) of "
                              "one group of layers",
                              shapeString(LayerIndptr.dims())));
  // Page ids and token positions are int32 in the kernels' arrays.
  constexpr int64_t Int32Max = std::numeric_limits<int32_t>::max();
  if (Cfg[3] > Int32Max || Cfg[2] > Int32Max ||
      Cfg[1] > Int32Max - 2 * Cfg[3] ||
      (Cfg[1] / Cfg[3] + 2) > Int32Max / Cfg[3])
    fail(kCreate, fmt::format("the cache config {} is too large: token "
                              "positions must fit int32",
                              shapeString(Cfg.dims())));
  KVCacheConfig C;
  C.PageSize = Cfg[3];
  C.LayerBegin = LayerIndptr[0];
  C.NumLayers = LayerIndptr[1] - LayerIndptr[0];
  C.NumQoHeads = positiveArg(A, 2, "num_qo_heads");
  C.NumKvHeads = positiveArg(A, 3, "num_kv_heads");
  C.HeadDim = positiveArg(A, 4, "qk_head_dim");
  if (positiveArg(A, 5, "v_head_dim") != C.HeadDim)
    fail(kCreate, "multi-head attention needs qk_head_dim == v_head_dim");
  if (C.NumQoHeads % C.NumKvHeads != 0)
    fail(kCreate, fmt::format("num_qo_heads {} is not a multiple of "
                              "num_kv_heads {}",
                              C.NumQoHeads, C.NumKvHeads));
  Shape Kinds = arg<Shape>(kCreate, A, 6);
  if (static_cast<int64_t>(Kinds.size()) < LayerIndptr[1])
    fail(kCreate, fmt::format("attn_kinds has {} entries for {} layers",
                              Kinds.size(), LayerIndptr[1]));
  for (size_t L = 0; L < Kinds.size(); ++L)
    if (Kinds[L] != 0)
      fail(kCreate, fmt::format("layer {} has attention kind {} ({}); "
                                "vmjit's paged cache holds multi-head "
                                "attention (kind 0) layers only",
                                L, Kinds[L],
                                Kinds[L] == 1   ? "MLA"
                                : Kinds[L] == 2 ? "linear attention"
                                : Kinds[L] == 3 ? "sliding-window MHA"
                                                : "unknown"));
  if (arg<bool>(kCreate, A, 7))
    fail(kCreate, "KV transfer (enable_kv_transfer) is not supported by "
                  "vmjit's paged KV cache");
  int64_t Rope = arg<int64_t>(kCreate, A, 8);
  if (Rope < 0 || Rope > 2)
    fail(kCreate, fmt::format("rope_mode {} is not 0 (none), 1 (normal) or 2 "
                              "(inline)",
                              Rope));
  C.Rope = static_cast<RoPEMode>(Rope);
  C.RotaryScale = arg<double>(kCreate, A, 9);
  C.RotaryTheta = arg<double>(kCreate, A, 10);
  Tensor Init = arg<Tensor>(kCreate, A, 12);
  needCpu(kCreate, Init, "the init tensor (argument 13)");
  C.DType = Init.dtype();
  C.PrefillChunkSize = Cfg[2];
  C.NumTotalPages = (Cfg[1] + C.PageSize - 1) / C.PageSize + 1;
  return C;
}

/// paged_attention_kv_cache_create(28 or 29 arguments, TVM's order).
void create(PackedArgs A, Any *Rv) {
  needArgs(kCreate, A, 28, 29);
  KVCacheConfig C = configOf(A);
  AttentionKernels K;
  if (auto Ext = A[11].as<Tensor>()) {
    if (C.Rope != RoPEMode::Normal)
      fail(kCreate, "The RoPE mode must be normal to support RoPE extension "
                    "factors.");
    K.RopeExtFactors = *Ext;
  }
  K.TransposeAppend = functionArg(A, 13, /*Optional=*/true);
  if (!K.TransposeAppend.defined())
    fail(kCreate, "argument 14 (f_transpose_append_mha) must be a function "
                  "for multi-head attention layers");
  K.PrefillRagged = backendKernel(A, 15, "prefill_ragged", true);
  K.PrefillPaged = backendKernel(A, 16, "prefill", true);
  K.DecodePaged = backendKernel(A, 17, "decode", true);
  // 18-22: sliding-window, tree-attention and MLA kernels, not used.
  for (int32_t I = 18; I <= 22; ++I)
    backendKernel(A, I, "an unused attention kernel", false);
  Array Merge = arg<Array>(kCreate, A, 23);
  if (Merge.size() == 0)
    fail(kCreate, "Merge inplace function is not defined.");
  for (size_t I = 0; I < Merge.size(); ++I) {
    auto F = Merge[I].as<Function>();
    if (!F)
      fail(kCreate, "argument 24 (f_merge_inplace) must hold functions",
           "TypeError");
    K.Merge.push_back(*F);
  }
  K.SplitRotary = functionArg(A, 24, false);
  K.CopySinglePage = functionArg(A, 25, false);
  K.DebugGetKV = functionArg(A, 26, /*Optional=*/true);
  *Rv = PagedKVCache(makeObject<PagedKVCacheObj>(C, std::move(K)));
}

//===----------------------------------------------------------------------===//
// vm.builtin.kv_state_*
//===----------------------------------------------------------------------===//

void clear(PagedKVCache C) { C->clear("vm.builtin.kv_state_clear"); }
void addSequence(PagedKVCache C, int64_t Seq) {
  C->addSequence("vm.builtin.kv_state_add_sequence", Seq);
}
void removeSequence(PagedKVCache C, int64_t Seq) {
  C->removeSequence("vm.builtin.kv_state_remove_sequence", Seq);
}
void forkSequence(PagedKVCache C, int64_t Parent, int64_t Child,
                  std::optional<int64_t> ForkPos) {
  C->forkSequence("vm.builtin.kv_state_fork_sequence", Parent, Child,
                  ForkPos.value_or(-1));
}
void popN(PagedKVCache C, int64_t Seq, int64_t N) {
  C->popN("vm.builtin.kv_state_popn", Seq, N);
}

/// kv_state_begin_forward(cache, seq_ids, append_lengths[, tree parents]).
void beginForward(PackedArgs A, Any *) {
  const char *Fn = "vm.builtin.kv_state_begin_forward";
  if (A.size() != 3 && A.size() != 4)
    fail(Fn, "KVState BeginForward only accepts 3 or 4 arguments");
  PagedKVCache C = arg<PagedKVCache>(Fn, A, 0);
  Shape SeqIds = arg<Shape>(Fn, A, 1);
  Shape Lengths = arg<Shape>(Fn, A, 2);
  if (A.size() == 4 && !A[3].isNone())
    fail(Fn, "token trees (token_tree_parent_ptr) are not supported by "
             "vmjit's paged KV cache");
  C->beginForward(Fn, SeqIds.dims(), Lengths.dims());
}

void endForward(PagedKVCache C) {
  C->endForward("vm.builtin.kv_state_end_forward");
}

//===----------------------------------------------------------------------===//
// vm.builtin.attention_kv_cache_* and kv_cache_disagg_*
//===----------------------------------------------------------------------===//

bool empty(PagedKVCache C) { return C->empty(); }
int64_t numAvailablePages(PagedKVCache C) { return C->numAvailablePages(); }
int64_t totalSequenceLength(PagedKVCache C) { return C->totalSequenceLength(); }
Tensor queryPositions(PagedKVCache C) {
  return C->queryPositions("vm.builtin.attention_kv_cache_get_query_positions");
}

void attentionWithFusedQKV(PagedKVCache C, int64_t Layer, double SmScale,
                           Tensor Qkv, Tensor O) {
  C->attentionWithFusedQKV(
      "vm.builtin.attention_kv_cache_attention_with_fused_qkv", Layer, Qkv, O,
      SmScale);
}
void selfAttention(PagedKVCache C, int64_t Layer, double SmScale, Tensor Q,
                   Tensor K, Tensor V, Tensor O, Tensor Lse) {
  C->selfAttention("vm.builtin.attention_kv_cache_self_attention", Layer, Q, K,
                   V, O, Lse, SmScale);
}
void crossAttention(PagedKVCache C, int64_t Layer, double SmScale, Tensor Q,
                    Tensor O, Tensor Lse) {
  C->crossAttention("vm.builtin.attention_kv_cache_cross_attention", Layer, Q,
                    O, Lse, SmScale);
}
void attentionWithSharedKV(PagedKVCache C, int64_t Layer, double SmScale,
                           Tensor Q, Tensor K, Tensor V, Tensor O) {
  C->attentionWithSharedKV(
      "vm.builtin.attention_kv_cache_attention_with_shared_kv", Layer, Q, K, V,
      O, SmScale);
}

Array mergeAttnOutputInplace(PagedKVCache C, Tensor OSelf, Tensor LseSelf,
                             Tensor OCross, Tensor LseCross) {
  const auto &Merge = C->kernels().Merge;
  if (Merge.size() < 2)
    fail("vm.builtin.attention_kv_cache_merge_attn_output_inplace",
         "The general attention merge function is not defined.");
  callKernel(Merge[1], OSelf, LseSelf, OCross, LseCross);
  return Array(std::vector<Any>{Any(OSelf), Any(LseSelf)});
}

void commitAccepted(PagedKVCache C, Shape SeqIds, Shape Leaves) {
  C->commitAcceptedTokenTreeNodes(
      "vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes",
      SeqIds.dims(), Leaves.dims());
}

void debugGetKV(PagedKVCache C, int64_t Seq, int64_t Start, int64_t End,
                Tensor K, Tensor V) {
  C->debugGetKV("vm.builtin.attention_kv_cache_debug_get_kv", Seq, Start, End,
                K, V);
}

void debugGetKVMLA(PagedKVCache, int64_t, int64_t, int64_t, Tensor) {
  fail("vm.builtin.attention_kv_cache_debug_get_kv_mla",
       "Only MHA is supported for DebugGetKVMLA: the cache has no MLA layers");
}

PagedKVCache appendMLAKV(PagedKVCache, int64_t Layer, Tensor) {
  fail("vm.builtin.attention_kv_cache_append_mla_kv",
       fmt::format("layer {} is not an MLA layer: the cache holds "
                   "multi-head attention layers only",
                   Layer));
}

void enableSlidingWindow(PagedKVCache, int64_t, int64_t, int64_t) {
  fail("vm.builtin.attention_kv_cache_enable_sliding_window_for_seq",
       "The KV cache does not support sliding window.");
}

/// kv_cache_disagg_prepare_recv(cache, seq, length): begins a forward of
/// `length` tokens and returns where they go, compressed as TVM does:
/// [segments, begin_1, length_1, ..., begin_n, length_n].
Shape disaggPrepareRecv(PagedKVCache C, int64_t Seq, int64_t Length) {
  const int64_t Ids[] = {Seq}, Lengths[] = {Length};
  C->beginForward("vm.builtin.kv_cache_disagg_prepare_recv", Ids, Lengths);
  const AuxArray &Map = C->appendPositions();
  std::vector<int64_t> Out{1, Map[0]};
  for (int64_t I = 1; I < Map.size(); ++I)
    if (Map[I] != Map[I - 1] + 1) {
      Out.push_back(Map[I - 1] - Out.back() + 1);
      ++Out[0];
      Out.push_back(Map[I]);
    }
  Out.push_back(Map.back() - Out.back() + 1);
  return Shape(std::move(Out));
}

void disaggMarkSend(PagedKVCache, int64_t, int64_t, Shape, int64_t) {
  fail("vm.builtin.kv_cache_disagg_mark_send",
       "KV transfer is not enabled for this cache (vmjit's paged KV cache "
       "does not support it)");
}

} // namespace

void registerPagedKVCacheBuiltins(GlobalDef &D) {
  D.defPacked(kCreate, create)
      .def("vm.builtin.kv_state_clear", clear)
      .def("vm.builtin.kv_state_add_sequence", addSequence)
      .def("vm.builtin.kv_state_remove_sequence", removeSequence)
      .def("vm.builtin.kv_state_fork_sequence", forkSequence)
      .def("vm.builtin.kv_state_popn", popN)
      .defPacked("vm.builtin.kv_state_begin_forward", beginForward)
      .def("vm.builtin.kv_state_end_forward", endForward)
      .def("vm.builtin.kv_cache_disagg_prepare_recv", disaggPrepareRecv)
      .def("vm.builtin.kv_cache_disagg_mark_send", disaggMarkSend)
      .def("vm.builtin.attention_kv_cache_enable_sliding_window_for_seq",
           enableSlidingWindow)
      .def("vm.builtin.attention_kv_cache_commit_accepted_token_tree_nodes",
           commitAccepted)
      .def("vm.builtin.attention_kv_cache_empty", empty)
      .def("vm.builtin.attention_kv_cache_get_num_available_pages",
           numAvailablePages)
      .def("vm.builtin.attention_kv_cache_get_total_sequence_length",
           totalSequenceLength)
      .def("vm.builtin.attention_kv_cache_get_query_positions", queryPositions)
      .def("vm.builtin.attention_kv_cache_debug_get_kv", debugGetKV)
      .def("vm.builtin.attention_kv_cache_debug_get_kv_mla", debugGetKVMLA)
      .def("vm.builtin.attention_kv_cache_attention_with_fused_qkv",
           attentionWithFusedQKV)
      .def("vm.builtin.attention_kv_cache_self_attention", selfAttention)
      .def("vm.builtin.attention_kv_cache_cross_attention", crossAttention)
      .def("vm.builtin.attention_kv_cache_attention_with_shared_kv",
           attentionWithSharedKV)
      .def("vm.builtin.attention_kv_cache_append_mla_kv", appendMLAKV)
      .def("vm.builtin.attention_kv_cache_merge_attn_output_inplace",
           mergeAttnOutputInplace);
}

} // namespace vmjit::vm::builtin
