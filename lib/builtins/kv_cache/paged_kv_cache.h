//===- paged_kv_cache.h - TVM's paged attention KV cache --------*- C++ -*-===//
//
// Private to lib/builtins/kv_cache. The runtime object behind
// vm.builtin.paged_attention_kv_cache_create ("relax.vm.PagedAttentionKVCache"
// in TVM's src/runtime/vm/paged_kv_cache.cc), written for vmjit: the
// sequences, their blocks (shared prefixes after a fork) and pages, and per
// forward the page tables, lengths and position maps that TVM's TIR attention
// kernels take, handed to them as DLTensor views of buffers the cache owns (a
// warm decode step allocates nothing).
//
// What vmjit takes from TVM: multi-head attention layers, the TIR ("tirx")
// kernels on the CPU, RoPE none/normal/inline, fork, popn, two block depths
// with the merge of partial states. What it refuses at creation, with an
// error: MLA and linear-attention layers, sliding windows, KV transfer,
// FlashInfer kernels. Token trees are refused at begin_forward.
//
// Stricter than TVM (so a misuse gives an error, not a corrupted cache):
// begin_forward twice, end_forward or attention without begin_forward, a
// layer's attention twice in one forward, a sequence twice in one batch;
// and every check is made before the cache changes.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_BUILTINS_KV_CACHE_PAGED_KV_CACHE_H
#define VMJIT_LIB_BUILTINS_KV_CACHE_PAGED_KV_CACHE_H

#include "../builtins_internal.h"

#include "vmjit/runtime/function.h"
#include "vmjit/runtime/object.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace vmjit::vm::builtin {

/// TVM's RoPE modes: none, applied by the cache before attention (normal),
/// or inside the attention kernels (inline).
enum class RoPEMode : int64_t { None = 0, Normal = 1, Inline = 2 };

/// How many block levels the attention kernels see (TVM's
/// kPagedKVCacheMaxBlockDepth); deeper blocks join the last level.
inline constexpr int kMaxBlockDepth = 2;

/// A run of pages holding consecutive positions of one or more sequences
/// (several after a fork share it). TVM's Block.
struct KVBlock {
  std::vector<int32_t> PageIds;
  int32_t SeqLength = 0;
  /// Absolute position of the block's first token (for RoPE).
  int32_t StartPos = 0;
  int32_t ParentIdx = -1;
  /// Sequences and blocks that end in or continue from this block; a block
  /// referenced more than once takes no new tokens.
  int32_t ExternalRefs = 0;

  void reset() { *this = KVBlock(); }
};

/// A sequence: its last block (the others follow ParentIdx) and length.
struct KVSequence {
  int32_t LastBlock;
  int32_t SeqLength = 0;
};

/// Calls a kernel of the model with views of `Args`, telling the thread's
/// builtin kernel observer first (setBuiltinKernelObserver).
void observeKernelCall(const Function &F, std::span<const AnyView> Args);
extern thread_local bool HasKernelObserver;
template <typename... A> void callKernel(const Function &F, A &&...Args) {
  const AnyView Views[] = {AnyView(Args)...};
  if (HasKernelObserver) [[unlikely]]
    observeKernelCall(F, Views);
  F.callPacked(Views, static_cast<int32_t>(sizeof...(A)));
}

/// The kernels the model hands over at creation (TIR backend).
struct AttentionKernels {
  Function TransposeAppend;    // (pages, k, v, position map)
  Function PrefillRagged;      // self-attention of the new tokens
  Function PrefillPaged;       // new tokens against cached pages
  Function DecodePaged;        // one token per sequence against pages
  std::vector<Function> Merge; // [0]: in-place merge of partial states
  Function SplitRotary;        // split fused qkv (and apply RoPE)
  Function CopySinglePage;     // (pages, src, dst, length)
  Function DebugGetKV;         // optional
  std::optional<Tensor> RopeExtFactors;
};

/// The fixed configuration of a cache.
struct KVCacheConfig {
  int64_t PageSize;
  int64_t NumLayers;
  int64_t LayerBegin;
  int64_t NumQoHeads;
  int64_t NumKvHeads;
  int64_t HeadDim;
  int64_t NumTotalPages;
  int64_t PrefillChunkSize;
  RoPEMode Rope;
  double RotaryScale;
  double RotaryTheta;
  DLDataType DType;
};

/// A growable int32 array the kernels read, with a DLTensor over its
/// filled part (64-byte aligned, as TVM's kernels expect).
class AuxArray {
public:
  void clear() noexcept { Size = 0; }
  void push(int32_t V) {
    if (Size == Capacity)
      grow();
    Data[Size++] = V;
  }
  int64_t size() const noexcept { return Size; }
  int32_t operator[](int64_t I) const noexcept { return Data[I]; }
  int32_t back() const noexcept { return Data[Size - 1]; }
  /// The filled part as a 1-D int32 tensor (valid until the next push).
  DLTensor *dl() noexcept;
  /// A Tensor copy of the filled part (for a caller that keeps it).
  Tensor toTensor() const;

private:
  void grow();
  Tensor Buffer;
  int32_t *Data = nullptr;
  int64_t Size = 0;
  int64_t Capacity = 0;
  int64_t Dim = 0;
  DLTensor DL{};
};

/// A [rows, ...] buffer of which a forward uses the first `rows` rows.
class RowBuffer {
public:
  RowBuffer() = default;
  RowBuffer(std::span<const int64_t> Shape, DLDataType DType);
  DLTensor *rows(int64_t N) noexcept {
    Dims[0] = N;
    DL.shape = Dims; // (the buffer may have been moved)
    return &DL;
  }

private:
  Tensor Buffer;
  int64_t Dims[3] = {0, 0, 0};
  DLTensor DL{};
};

/// The per-depth page tables of the current forward.
struct DepthTables {
  AuxArray QoIndptr, PageIndptr, PageIndices, LastPageLen, KRopePosOffset;
};

class PagedKVCacheObj : public Object {
public:
  static int32_t typeIndex();
  static constexpr const char *kTypeKey = "relax.vm.PagedAttentionKVCache";

  PagedKVCacheObj(const KVCacheConfig &Config, AttentionKernels Kernels);

  // Sequences (paged_kv_cache_sequences.cpp).
  void clear(const char *Fn);
  void addSequence(const char *Fn, int64_t SeqId);
  void removeSequence(const char *Fn, int64_t SeqId);
  void forkSequence(const char *Fn, int64_t Parent, int64_t Child,
                    int64_t ForkPos);
  void popN(const char *Fn, int64_t SeqId, int64_t N);
  bool empty() const;
  int64_t numAvailablePages() const {
    return static_cast<int64_t>(FreePages.size());
  }
  int64_t totalSequenceLength() const;
  /// The cached K and V of positions [Start, End) of a sequence, into
  /// k/v of shape (layers, End - Start, kv heads, head dim).
  void debugGetKV(const char *Fn, int64_t SeqId, int64_t Start, int64_t End,
                  const Tensor &K, const Tensor &V);

  // Forward (paged_kv_cache_forward.cpp).
  void beginForward(const char *Fn, std::span<const int64_t> SeqIds,
                    std::span<const int64_t> AppendLengths);
  void endForward(const char *Fn);
  /// TVM's AttentionWithFusedQKV: split qkv (N, qo + 2 kv heads, dim),
  /// apply RoPE, append K/V, attend; writes o (N, qo heads, dim).
  void attentionWithFusedQKV(const char *Fn, int64_t LayerId, const Tensor &Qkv,
                             const Tensor &O, double SmScale);
  void selfAttention(const char *Fn, int64_t LayerId, const Tensor &Q,
                     const Tensor &K, const Tensor &V, const Tensor &O,
                     const Tensor &Lse, double SmScale);
  void crossAttention(const char *Fn, int64_t LayerId, const Tensor &Q,
                      const Tensor &O, const Tensor &Lse, double SmScale);
  void attentionWithSharedKV(const char *Fn, int64_t LayerId, const Tensor &Q,
                             const Tensor &K, const Tensor &V, const Tensor &O,
                             double SmScale);
  /// Pops the tokens of the last forward that were not accepted (chains
  /// only: leaf -1 pops all of them).
  void commitAcceptedTokenTreeNodes(const char *Fn,
                                    std::span<const int64_t> SeqIds,
                                    std::span<const int64_t> LeafIndices);
  Tensor queryPositions(const char *Fn);
  const AttentionKernels &kernels() const noexcept { return Kernels; }
  /// The positions of the last forward's tokens in the page pool.
  const AuxArray &appendPositions() const noexcept { return AppendPosMap; }

private:
  // Sequences.
  KVSequence &sequence(const char *Fn, int64_t SeqId);
  int32_t takeFreeBlock();
  int32_t takeFreePage(const char *Fn);
  std::vector<int32_t> blockTrace(const KVSequence &S) const;
  /// The blocks of `S`, root first, into `Out` (its capacity is kept).
  void blockTrace(const KVSequence &S, std::vector<int32_t> &Out) const;
  void copySinglePage(int32_t Src, int32_t Dst, int64_t Length);
  void noForward(const char *Fn, const char *What) const;

  // Forward.
  void planBatch(const char *Fn, std::span<const int64_t> SeqIds,
                 std::span<const int64_t> AppendLengths);
  void planDepths(std::span<const int64_t> AppendLengths, bool IsDecode);
  void reserveAppend(KVSequence &S, int64_t Append);
  void buildDepthTables(std::span<const int32_t> Chunks,
                        std::span<const int32_t> ChunkLengths, int Depth,
                        std::span<const std::vector<int32_t>> Trailing);
  void buildPositionMaps(std::span<const int64_t> AppendLengths);
  int64_t checkLayer(const char *Fn, int64_t LayerId) const;
  /// ValueError unless `T` is (tokens of the forward, Heads, head dim) of
  /// the cache's dtype, on the CPU; checkLse: (tokens, qo heads) float32.
  void checkRows(const char *Fn, const char *What, const Tensor &T,
                 int64_t Heads) const;
  void checkLse(const char *Fn, const Tensor &Lse) const;
  void checkAttention(const char *Fn, int64_t Local, bool MarkLayer);
  void selfAttend(DLTensor *Q, DLTensor *K, DLTensor *V, DLTensor *O,
                  DLTensor *Lse, double SmScale);
  bool crossAttend(int64_t Local, DLTensor *Q, DLTensor *O, DLTensor *Lse,
                   double SmScale, bool IsFirstKernel);
  void attend(int64_t Local, DLTensor *Q, DLTensor *K, DLTensor *V, DLTensor *O,
              double SmScale);

  KVCacheConfig Config;
  AttentionKernels Kernels;
  /// Per layer: (pages, 2, kv heads, page size, head dim).
  std::vector<Tensor> Pages;
  std::vector<int32_t> FreePages;
  std::unordered_map<int64_t, KVSequence> Sequences;
  std::vector<KVBlock> Blocks;
  std::vector<int32_t> FreeBlocks;

  // The current forward.
  bool InForward = false;
  std::vector<bool> LayerDone;
  int64_t TotalAppend = 0;
  int NumDepths = 0;
  bool AppendBeforeAttn = false;
  bool UseDecodeKernel[kMaxBlockDepth] = {false, false};
  std::vector<int64_t> CurSeqIds, CurAppendLengths;
  DepthTables Depths[kMaxBlockDepth];
  /// The plan of the current forward, kept so that a warm step allocates
  /// nothing: the batch's sequences, their block traces (the first
  /// kMaxBlockDepth blocks, and those deeper), each depth's chunks.
  struct BatchPlan {
    std::vector<KVSequence *> Seqs;
    std::vector<std::vector<int32_t>> Traces, Trailing;
    std::vector<int32_t> DepthBlocks;
    std::vector<int32_t> ChunkBlocks[kMaxBlockDepth];
    std::vector<int32_t> ChunkLengths[kMaxBlockDepth];
  } Plan;
  AuxArray AppendLengthIndptr, KRaggedRopeOffset, QRopePosMap, AppendPosMap;

  // Scratch rows for the split q/k/v and partial outputs.
  RowBuffer TempQ, TempK, TempV, TempOut, TempLse, MergedLse;
};

/// A reference to a paged cache; as a typed parameter it accepts only one.
class PagedKVCache : public ObjectRef {
public:
  using ContainerType = PagedKVCacheObj;
  static constexpr const char *kTypeName = PagedKVCacheObj::kTypeKey;
  PagedKVCache() = default;
  explicit PagedKVCache(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  PagedKVCacheObj *operator->() const noexcept {
    return static_cast<PagedKVCacheObj *>(ObjectRef::get());
  }
};

} // namespace vmjit::vm::builtin

namespace vmjit {
template <>
struct TypeTraits<vm::builtin::PagedKVCache>
    : vm::builtin::DynamicObjectRefTypeTraits<vm::builtin::PagedKVCache> {};
} // namespace vmjit

#endif // VMJIT_LIB_BUILTINS_KV_CACHE_PAGED_KV_CACHE_H
