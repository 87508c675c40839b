//===- paged_kv_cache_forward.cpp - A forward through the paged cache -----===//
//
// begin_forward plans a batch as TVM does (paged_kv_cache.cc, attn_utils.h):
// the blocks of each sequence by depth (a shared prefix is depth 0, the
// sequence's own blocks depth 1), chunks per depth (coalesced when several
// sequences share a block, unless the batch decodes one token each), the
// page tables, last-page lengths, RoPE offsets and the position of every
// new token in the page pool. The attention calls then run the model's
// kernels in TVM's order and with TVM's arguments:
//   split qkv + RoPE; append K/V (before attention when decoding);
//   ragged self-attention of the new tokens (prefill); paged attention per
//   depth (decode or prefill kernel), merged in place into the output;
//   append K/V (after attention when prefilling).
// Every check is made before the cache changes.
//
//===----------------------------------------------------------------------===//

#include "paged_kv_cache.h"

#include "../builtins_internal.h"
#include "vmjit/runtime/data_type.h"

#include <algorithm>
#include <fmt/format.h>

namespace vmjit::vm::builtin {

namespace {
int64_t ceilDiv(int64_t A, int64_t B) { return (A + B - 1) / B; }
} // namespace

//===----------------------------------------------------------------------===//
// Planning.
//===----------------------------------------------------------------------===//

void PagedKVCacheObj::planBatch(const char *Fn, std::span<const int64_t> SeqIds,
                                std::span<const int64_t> AppendLengths) {
  if (InForward)
    fail(Fn, "kv_state_begin_forward was called again before "
             "kv_state_end_forward closed the last forward");
  if (SeqIds.size() != AppendLengths.size())
    fail(Fn, fmt::format("The seq_ids size ({}) and append_lengths size ({}) "
                         "mismatch.",
                         SeqIds.size(), AppendLengths.size()));
  if (SeqIds.empty())
    fail(Fn, "a forward needs at least one sequence");
  int64_t Total = 0, PagesNeeded = 0;
  Plan.Seqs.clear();
  for (size_t I = 0; I < SeqIds.size(); ++I) {
    KVSequence &S = sequence(Fn, SeqIds[I]);
    if (std::find(SeqIds.begin(), SeqIds.begin() + static_cast<long>(I),
                  SeqIds[I]) != SeqIds.begin() + static_cast<long>(I))
      fail(Fn, fmt::format("The sequence \"{}\" appears twice in the batch.",
                           SeqIds[I]));
    if (AppendLengths[I] <= 0)
      fail(Fn, fmt::format("Append with length {} is not allowed (sequence "
                           "\"{}\").",
                           AppendLengths[I], SeqIds[I]));
    if (AppendLengths[I] > Config.PrefillChunkSize)
      fail(Fn,
           fmt::format("the forward appends {} tokens to sequence \"{}\", "
                       "more than the cache's prefill chunk size {}",
                       AppendLengths[I], SeqIds[I], Config.PrefillChunkSize));
    const KVBlock &B = Blocks[static_cast<size_t>(S.LastBlock)];
    if (B.ExternalRefs != 1)
      fail(Fn, fmt::format("The block is {}-time referenced by other blocks, "
                           "thus cannot accept new KV values (sequence "
                           "\"{}\").",
                           B.ExternalRefs - 1, SeqIds[I]));
    Total += AppendLengths[I];
    PagesNeeded += std::max<int64_t>(
        0, ceilDiv(B.SeqLength + AppendLengths[I], Config.PageSize) -
               static_cast<int64_t>(B.PageIds.size()));
    Plan.Seqs.push_back(&S);
  }
  if (Total > Config.PrefillChunkSize)
    fail(Fn, fmt::format("the forward appends {} tokens, more than the "
                         "cache's prefill chunk size {}",
                         Total, Config.PrefillChunkSize));
  if (PagesNeeded > static_cast<int64_t>(FreePages.size()))
    fail(Fn, fmt::format("The KV cache is full. No page can be allocated "
                         "(the forward needs {} more pages of {} tokens, {} "
                         "are free).",
                         PagesNeeded, Config.PageSize, FreePages.size()));
  TotalAppend = Total;
}

/// TVM's GetChunkedBlockIds: the chunks of one depth (consecutive
/// sequences on the same block coalesced into one, unless the decode kernel
/// runs it or `Coalesce` is off), and whether the decode kernel runs it.
static bool chunkDepth(std::span<const int32_t> BlockIds, bool Coalesce,
                       std::span<const int64_t> Lengths,
                       const std::vector<KVBlock> &Blocks, bool IsDecode,
                       std::vector<int32_t> &OutBlocks,
                       std::vector<int32_t> &OutLengths) {
  auto pagesOf = [&](int32_t B) {
    return B == -1 ? 0 : Blocks[static_cast<size_t>(B)].PageIds.size();
  };
  size_t Uncoalesced = 0, Coalesced = 0;
  for (size_t I = 0; I < BlockIds.size(); ++I) {
    Uncoalesced += pagesOf(BlockIds[I]);
    if (I == 0 || BlockIds[I] != BlockIds[I - 1])
      Coalesced += pagesOf(BlockIds[I]);
  }
  double Ratio = Coalesced > 0 ? static_cast<double>(Uncoalesced) /
                                     static_cast<double>(Coalesced)
                               : 0.0;
  bool UseDecode = IsDecode && Ratio < 32;
  OutBlocks.clear();
  OutLengths.clear();
  for (size_t I = 0; I < BlockIds.size(); ++I) {
    if (Coalesce && !UseDecode && I > 0 && BlockIds[I] == BlockIds[I - 1]) {
      OutLengths.back() += static_cast<int32_t>(Lengths[I]);
      continue;
    }
    OutBlocks.push_back(BlockIds[I]);
    OutLengths.push_back(static_cast<int32_t>(Lengths[I]));
  }
  return UseDecode;
}

void PagedKVCacheObj::reserveAppend(KVSequence &S, int64_t Append) {
  KVBlock &B = Blocks[static_cast<size_t>(S.LastBlock)];
  const int64_t Want = ceilDiv(B.SeqLength + Append, Config.PageSize);
  while (static_cast<int64_t>(B.PageIds.size()) < Want)
    B.PageIds.push_back(takeFreePage("vm.builtin.kv_state_begin_forward"));
  B.SeqLength += static_cast<int32_t>(Append);
}

void PagedKVCacheObj::buildDepthTables(
    std::span<const int32_t> Chunks, std::span<const int32_t> ChunkLengths,
    int D, std::span<const std::vector<int32_t>> Trailing) {
  DepthTables &T = Depths[D];
  for (AuxArray *A : {&T.QoIndptr, &T.PageIndptr, &T.PageIndices,
                      &T.LastPageLen, &T.KRopePosOffset})
    A->clear();
  T.QoIndptr.push(0);
  T.PageIndptr.push(0);
  const int32_t PS = static_cast<int32_t>(Config.PageSize);
  for (size_t I = 0; I < Chunks.size(); ++I) {
    T.QoIndptr.push(T.QoIndptr.back() + ChunkLengths[I]);
    if (Chunks[I] == -1) {
      T.PageIndptr.push(T.PageIndptr.back());
      T.LastPageLen.push(0);
      T.KRopePosOffset.push(0);
      continue;
    }
    const KVBlock &B = Blocks[static_cast<size_t>(Chunks[I])];
    int32_t NumPages = 0, Length = 0;
    auto addBlock = [&](const KVBlock &Block) {
      for (int32_t P : Block.PageIds)
        T.PageIndices.push(P);
      NumPages += static_cast<int32_t>(Block.PageIds.size());
      Length += Block.SeqLength;
    };
    addBlock(B);
    // At the deepest level a sequence's deeper blocks join its chunk.
    if (D == kMaxBlockDepth - 1)
      for (int32_t Id : Trailing[I])
        addBlock(Blocks[static_cast<size_t>(Id)]);
    T.PageIndptr.push(T.PageIndptr.back() + NumPages);
    T.LastPageLen.push(Length == 0 ? 0 : (Length - 1) % PS + 1);
    T.KRopePosOffset.push(B.StartPos);
  }
}

void PagedKVCacheObj::buildPositionMaps(
    std::span<const int64_t> AppendLengths) {
  const std::vector<KVSequence *> &Seqs = Plan.Seqs;
  QRopePosMap.clear();
  AppendPosMap.clear();
  AppendLengthIndptr.clear();
  AppendLengthIndptr.push(0);
  const int32_t PS = static_cast<int32_t>(Config.PageSize);
  for (size_t I = 0; I < Seqs.size(); ++I) {
    const KVBlock &B = Blocks[static_cast<size_t>(Seqs[I]->LastBlock)];
    const int32_t Append = static_cast<int32_t>(AppendLengths[I]);
    for (int32_t Pos = 0; Pos < Append; ++Pos) {
      QRopePosMap.push(KRaggedRopeOffset[static_cast<int64_t>(I)] + Pos);
      int32_t InBlock = B.SeqLength - Append + Pos;
      AppendPosMap.push(B.PageIds[static_cast<size_t>(InBlock / PS)] * PS +
                        InBlock % PS);
    }
    AppendLengthIndptr.push(AppendLengthIndptr.back() + Append);
  }
}

void PagedKVCacheObj::planDepths(std::span<const int64_t> AppendLengths,
                                 bool IsDecode) {
  // The blocks of each sequence by depth; deeper ones trail the last level.
  const size_t N = Plan.Seqs.size();
  Plan.Traces.resize(N);
  Plan.Trailing.resize(N);
  NumDepths = 0;
  for (size_t I = 0; I < N; ++I) {
    std::vector<int32_t> &Trace = Plan.Traces[I];
    blockTrace(*Plan.Seqs[I], Trace);
    Plan.Trailing[I].clear();
    if (Trace.size() > static_cast<size_t>(kMaxBlockDepth)) {
      Plan.Trailing[I].assign(Trace.begin() + kMaxBlockDepth, Trace.end());
      Trace.resize(kMaxBlockDepth);
    }
    NumDepths = std::max(NumDepths, static_cast<int>(Trace.size()));
  }
  Plan.DepthBlocks.resize(N);
  for (int D = 0; D < NumDepths; ++D) {
    for (size_t I = 0; I < N; ++I)
      Plan.DepthBlocks[I] = D < static_cast<int>(Plan.Traces[I].size())
                                ? Plan.Traces[I][static_cast<size_t>(D)]
                                : -1;
    UseDecodeKernel[D] = chunkDepth(
        Plan.DepthBlocks, /*Coalesce=*/D != kMaxBlockDepth - 1, AppendLengths,
        Blocks, IsDecode, Plan.ChunkBlocks[D], Plan.ChunkLengths[D]);
  }
}

void PagedKVCacheObj::beginForward(const char *Fn,
                                   std::span<const int64_t> SeqIds,
                                   std::span<const int64_t> AppendLengths) {
  planBatch(Fn, SeqIds, AppendLengths);
  // From here on nothing fails: the checks are made.
  const size_t N = SeqIds.size();
  CurSeqIds.assign(SeqIds.begin(), SeqIds.end());
  CurAppendLengths.assign(AppendLengths.begin(), AppendLengths.end());
  bool IsDecode = true;
  KRaggedRopeOffset.clear();
  for (size_t I = 0; I < N; ++I) {
    KRaggedRopeOffset.push(Plan.Seqs[I]->SeqLength);
    Plan.Seqs[I]->SeqLength += static_cast<int32_t>(AppendLengths[I]);
    IsDecode &= AppendLengths[I] == 1;
  }
  planDepths(AppendLengths, IsDecode);
  // A decode step appends first and attends over the pages; a prefill
  // attends over the old pages and the new tokens, then appends.
  AppendBeforeAttn = UseDecodeKernel[NumDepths - 1];
  if (AppendBeforeAttn)
    for (size_t I = 0; I < N; ++I)
      reserveAppend(*Plan.Seqs[I], AppendLengths[I]);
  for (int D = 0; D < NumDepths; ++D)
    buildDepthTables(Plan.ChunkBlocks[D], Plan.ChunkLengths[D], D,
                     Plan.Trailing);
  if (!AppendBeforeAttn)
    for (size_t I = 0; I < N; ++I)
      reserveAppend(*Plan.Seqs[I], AppendLengths[I]);
  buildPositionMaps(AppendLengths);
  std::fill(LayerDone.begin(), LayerDone.end(), false);
  InForward = true;
}

void PagedKVCacheObj::endForward(const char *Fn) {
  if (!InForward)
    fail(Fn, "kv_state_end_forward without kv_state_begin_forward: no "
             "forward is open");
  InForward = false;
}

//===----------------------------------------------------------------------===//
// Attention.
//===----------------------------------------------------------------------===//

int64_t PagedKVCacheObj::checkLayer(const char *Fn, int64_t LayerId) const {
  int64_t Local = LayerId - Config.LayerBegin;
  if (Local < 0 || Local >= Config.NumLayers)
    fail(Fn,
         fmt::format("layer {} is not in the cache, which holds layers "
                     "[{}, {})",
                     LayerId, Config.LayerBegin,
                     Config.LayerBegin + Config.NumLayers),
         "IndexError");
  return Local;
}

void PagedKVCacheObj::checkAttention(const char *Fn, int64_t Local,
                                     bool MarkLayer) {
  if (!InForward)
    fail(Fn, "attention needs a forward: call kv_state_begin_forward first");
  if (!MarkLayer)
    return;
  if (LayerDone[static_cast<size_t>(Local)])
    fail(Fn, fmt::format("layer {} already appended its K/V in this forward",
                         Local + Config.LayerBegin));
  LayerDone[static_cast<size_t>(Local)] = true;
}

namespace {
/// ValueError unless `T` has the given rank, dtype and (where >= 0) dims.
void checkTensor(const char *Fn, const char *What, const Tensor &T,
                 DLDataType DType, std::initializer_list<int64_t> Dims) {
  bool Ok = T.dtype() == DType && T.ndim() == static_cast<int>(Dims.size());
  size_t I = 0;
  for (int64_t D : Dims) {
    if (!Ok)
      break;
    Ok = D < 0 || T.shape()[I] == D;
    ++I;
  }
  if (!Ok) {
    std::string Want;
    for (int64_t D : Dims)
      Want += (Want.empty() ? "" : ", ") + (D < 0 ? "n" : std::to_string(D));
    fail(Fn, fmt::format("{} must be ({}) of {}, but is {} of {}", What, Want,
                         dtypeName(DType), shapeString(T.shape()),
                         dtypeName(T.dtype())));
  }
  needCpu(Fn, T, What);
}

/// `T` with its first dimension cut to `Rows` (a copy of its DLTensor).
struct FirstRows {
  DLTensor DL;
  int64_t Dims[8];
  FirstRows(const Tensor &T, int64_t Rows) : DL(*T.dl()) {
    std::copy(T.shape().begin(), T.shape().end(), Dims);
    Dims[0] = Rows;
    DL.shape = Dims;
  }
};
} // namespace

void PagedKVCacheObj::selfAttend(DLTensor *Q, DLTensor *K, DLTensor *V,
                                 DLTensor *O, DLTensor *Lse, double SmScale) {
  DLTensor *Indptr = AppendLengthIndptr.dl();
  callKernel(Kernels.PrefillRagged, Q, Indptr, K, V, Indptr, QRopePosMap.dl(),
             KRaggedRopeOffset.dl(), O, Lse, int64_t{1},
             int64_t{Config.Rope == RoPEMode::Inline}, Config.RotaryScale,
             Config.RotaryTheta, SmScale);
}

bool PagedKVCacheObj::crossAttend(int64_t Local, DLTensor *Q, DLTensor *O,
                                  DLTensor *Lse, double SmScale,
                                  bool IsFirstKernel) {
  bool Computed = false;
  Tensor &P = Pages[static_cast<size_t>(Local)];
  const int64_t Inline = Config.Rope == RoPEMode::Inline;
  for (int D = 0; D < NumDepths; ++D) {
    DepthTables &T = Depths[D];
    if (T.PageIndices.size() == 0)
      continue;
    DLTensor *Out = IsFirstKernel ? O : TempOut.rows(TotalAppend);
    DLTensor *OutLse = IsFirstKernel ? Lse : TempLse.rows(TotalAppend);
    if (UseDecodeKernel[D])
      callKernel(Kernels.DecodePaged, Q, P, T.PageIndptr.dl(),
                 T.PageIndices.dl(), T.LastPageLen.dl(), T.KRopePosOffset.dl(),
                 QRopePosMap.dl(), Out, OutLse, Inline, Config.RotaryScale,
                 Config.RotaryTheta, SmScale);
    else
      callKernel(Kernels.PrefillPaged, Q, T.QoIndptr.dl(), P, T.PageIndptr.dl(),
                 T.PageIndices.dl(), T.LastPageLen.dl(), T.KRopePosOffset.dl(),
                 QRopePosMap.dl(), Out, OutLse, int64_t{0}, Inline,
                 Config.RotaryScale, Config.RotaryTheta, SmScale);
    if (!IsFirstKernel)
      callKernel(Kernels.Merge[0], O, Lse, TempOut.rows(TotalAppend),
                 TempLse.rows(TotalAppend));
    IsFirstKernel = false;
    Computed = true;
  }
  return Computed;
}

void PagedKVCacheObj::attend(int64_t Local, DLTensor *Q, DLTensor *K,
                             DLTensor *V, DLTensor *O, double SmScale) {
  DLTensor *Lse = MergedLse.rows(TotalAppend);
  bool SelfDone = false;
  if (!AppendBeforeAttn) {
    selfAttend(Q, K, V, O, Lse, SmScale);
    SelfDone = true;
  }
  bool CrossDone = crossAttend(Local, Q, O, Lse, SmScale, !SelfDone);
  if (!SelfDone && !CrossDone)
    fail("vm.builtin.attention_kv_cache_attention_with_fused_qkv",
         "Both self-attention and cross-attention are not computed.",
         "InternalError");
}

void PagedKVCacheObj::attentionWithFusedQKV(const char *Fn, int64_t LayerId,
                                            const Tensor &Qkv, const Tensor &O,
                                            double SmScale) {
  const int64_t Local = checkLayer(Fn, LayerId);
  const int64_t Qo = Config.NumQoHeads, Kv = Config.NumKvHeads,
                Dim = Config.HeadDim;
  checkTensor(Fn, "qkv_data", Qkv, Config.DType, {-1, Qo + 2 * Kv, Dim});
  checkTensor(Fn, "o_data", O, Config.DType, {Qkv.shape()[0], Qo, Dim});
  if (InForward && Qkv.shape()[0] < TotalAppend)
    fail(Fn, fmt::format("qkv_data has {} rows but the forward appends {} "
                         "tokens",
                         Qkv.shape()[0], TotalAppend));
  checkAttention(Fn, Local, /*MarkLayer=*/true);
  FirstRows QkvRows(Qkv, TotalAppend), ORows(O, TotalAppend);
  DLTensor *Q = TempQ.rows(TotalAppend), *K = TempK.rows(TotalAppend),
           *V = TempV.rows(TotalAppend);
  if (Kernels.RopeExtFactors)
    callKernel(Kernels.SplitRotary, &QkvRows.DL, QRopePosMap.dl(), Q, K, V,
               *Kernels.RopeExtFactors);
  else
    callKernel(Kernels.SplitRotary, &QkvRows.DL, QRopePosMap.dl(), Q, K, V,
               int64_t{Config.Rope == RoPEMode::Normal});
  Tensor &P = Pages[static_cast<size_t>(Local)];
  if (AppendBeforeAttn)
    callKernel(Kernels.TransposeAppend, P, K, V, AppendPosMap.dl());
  attend(Local, Q, K, V, &ORows.DL, SmScale);
  if (!AppendBeforeAttn)
    callKernel(Kernels.TransposeAppend, P, K, V, AppendPosMap.dl());
}

namespace {
/// The DLTensor the kernels take (they write their outputs through it).
DLTensor *dlOf(const Tensor &T) { return const_cast<DLTensor *>(T.dl()); }
} // namespace

void PagedKVCacheObj::checkRows(const char *Fn, const char *What,
                                const Tensor &T, int64_t Heads) const {
  checkTensor(Fn, What, T, Config.DType, {TotalAppend, Heads, Config.HeadDim});
}

void PagedKVCacheObj::checkLse(const char *Fn, const Tensor &Lse) const {
  checkTensor(Fn, "lse_data", Lse, DLDataType{kDLFloat, 32, 1},
              {TotalAppend, Config.NumQoHeads});
}

void PagedKVCacheObj::selfAttention(const char *Fn, int64_t LayerId,
                                    const Tensor &Q, const Tensor &K,
                                    const Tensor &V, const Tensor &O,
                                    const Tensor &Lse, double SmScale) {
  checkAttention(Fn, checkLayer(Fn, LayerId), /*MarkLayer=*/false);
  checkRows(Fn, "q_data", Q, Config.NumQoHeads);
  checkRows(Fn, "k_data", K, Config.NumKvHeads);
  checkRows(Fn, "v_data", V, Config.NumKvHeads);
  checkRows(Fn, "o_data", O, Config.NumQoHeads);
  checkLse(Fn, Lse);
  selfAttend(dlOf(Q), dlOf(K), dlOf(V), dlOf(O), dlOf(Lse), SmScale);
}

void PagedKVCacheObj::crossAttention(const char *Fn, int64_t LayerId,
                                     const Tensor &Q, const Tensor &O,
                                     const Tensor &Lse, double SmScale) {
  const int64_t Local = checkLayer(Fn, LayerId);
  checkAttention(Fn, Local, /*MarkLayer=*/false);
  checkRows(Fn, "q_data", Q, Config.NumQoHeads);
  checkRows(Fn, "o_data", O, Config.NumQoHeads);
  checkLse(Fn, Lse);
  crossAttend(Local, dlOf(Q), dlOf(O), dlOf(Lse), SmScale,
              /*IsFirstKernel=*/true);
}

void PagedKVCacheObj::attentionWithSharedKV(const char *Fn, int64_t LayerId,
                                            const Tensor &Q, const Tensor &K,
                                            const Tensor &V, const Tensor &O,
                                            double SmScale) {
  const int64_t Local = checkLayer(Fn, LayerId);
  checkAttention(Fn, Local, /*MarkLayer=*/false);
  checkRows(Fn, "q_data", Q, Config.NumQoHeads);
  checkRows(Fn, "current_k_data", K, Config.NumKvHeads);
  checkRows(Fn, "current_v_data", V, Config.NumKvHeads);
  checkRows(Fn, "o_data", O, Config.NumQoHeads);
  attend(Local, dlOf(Q), dlOf(K), dlOf(V), dlOf(O), SmScale);
}

void PagedKVCacheObj::commitAcceptedTokenTreeNodes(
    const char *Fn, std::span<const int64_t> SeqIds,
    std::span<const int64_t> LeafIndices) {
  if (SeqIds.size() != LeafIndices.size())
    fail(Fn, "The given seq_ids and leaf_indices have different size.");
  std::vector<int64_t> Pops;
  for (size_t I = 0; I < SeqIds.size(); ++I) {
    sequence(Fn, SeqIds[I]);
    // Without token trees every sequence's tokens are committed: only -1
    // (no node accepted: pop the last forward's tokens) is valid.
    if (LeafIndices[I] != -1)
      fail(Fn, fmt::format("The accepted nodes of sequence {} are already "
                           "committed.",
                           SeqIds[I]));
    auto It = std::find(CurSeqIds.begin(), CurSeqIds.end(), SeqIds[I]);
    if (It == CurSeqIds.end())
      fail(Fn,
           fmt::format("sequence {} was not in the last forward", SeqIds[I]));
    Pops.push_back(
        CurAppendLengths[static_cast<size_t>(It - CurSeqIds.begin())]);
  }
  for (size_t I = 0; I < SeqIds.size(); ++I)
    popN(Fn, SeqIds[I],
         std::min<int64_t>(Pops[I], sequence(Fn, SeqIds[I]).SeqLength));
}

Tensor PagedKVCacheObj::queryPositions(const char *Fn) {
  if (!InForward)
    fail(Fn, "query positions are those of an open forward: call "
             "kv_state_begin_forward first");
  return QRopePosMap.toTensor();
}

} // namespace vmjit::vm::builtin
