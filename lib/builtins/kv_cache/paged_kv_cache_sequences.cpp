//===- paged_kv_cache_sequences.cpp - Sequences, blocks and pages ---------===//
//
// The paged cache's bookkeeping outside a forward: sequences added, removed,
// forked (sharing the parent's blocks up to the fork position, with a copy
// of a partly shared page) and shortened (popn), the free page and block
// pools, and the queries. TVM's algorithms (paged_kv_cache.cc), with every
// check made before anything changes.
//
//===----------------------------------------------------------------------===//

#include "paged_kv_cache.h"

#include "../builtins_internal.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/data_type.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace vmjit::vm::builtin {

namespace {
thread_local vm::KernelCallObserver Observer = nullptr;
thread_local void *ObserverContext = nullptr;
} // namespace
thread_local bool HasKernelObserver = false;

void observeKernelCall(const Function &F, std::span<const AnyView> Args) {
  if (Observer)
    Observer(ObserverContext, F, Args);
}

int32_t PagedKVCacheObj::typeIndex() {
  static const int32_t Index = registerDynamicType(kTypeKey);
  return Index;
}

//===----------------------------------------------------------------------===//
// Buffers the kernels read.
//===----------------------------------------------------------------------===//

void AuxArray::grow() {
  int64_t NewCapacity = std::max<int64_t>(Capacity * 2, 64);
  Tensor New = Tensor::empty({NewCapacity}, DLDataType{kDLInt, 32, 1});
  if (Size)
    std::memcpy(New.data(), Data, static_cast<size_t>(Size) * 4);
  Buffer = std::move(New);
  Data = Buffer.data<int32_t>();
  Capacity = NewCapacity;
}

DLTensor *AuxArray::dl() noexcept {
  if (!Data)
    grow(); // a kernel may read an empty array: give it memory
  DL.data = Data;
  DL.device = DLDevice{kDLCPU, 0};
  DL.ndim = 1;
  DL.dtype = DLDataType{kDLInt, 32, 1};
  Dim = Size;
  DL.shape = &Dim;
  DL.strides = nullptr;
  DL.byte_offset = 0;
  return &DL;
}

Tensor AuxArray::toTensor() const {
  Tensor T = Tensor::empty({Size}, DLDataType{kDLInt, 32, 1});
  if (Size)
    std::memcpy(T.data(), Data, static_cast<size_t>(Size) * 4);
  return T;
}

RowBuffer::RowBuffer(std::span<const int64_t> Shape, DLDataType DType)
    : Buffer(Tensor::empty(Shape, DType)) {
  for (size_t I = 0; I < Shape.size(); ++I)
    Dims[I] = Shape[I];
  DL = *Buffer.dl();
  DL.shape = Dims;
  DL.strides = nullptr;
}

//===----------------------------------------------------------------------===//
// Construction and the pools.
//===----------------------------------------------------------------------===//

PagedKVCacheObj::PagedKVCacheObj(const KVCacheConfig &C, AttentionKernels K)
    : Object(typeIndex(), objectDeleter<PagedKVCacheObj>), Config(C),
      Kernels(std::move(K)) {
  const int64_t PageShape[] = {C.NumTotalPages, 2, C.NumKvHeads, C.PageSize,
                               C.HeadDim};
  for (int64_t L = 0; L < C.NumLayers; ++L)
    Pages.push_back(Tensor::empty(PageShape, C.DType));
  for (int64_t P = C.NumTotalPages - 1; P >= 0; --P)
    FreePages.push_back(static_cast<int32_t>(P));
  const int64_t Chunk = C.PrefillChunkSize;
  const int64_t Q[] = {Chunk, C.NumQoHeads, C.HeadDim};
  const int64_t KV[] = {Chunk, C.NumKvHeads, C.HeadDim};
  const int64_t Lse[] = {Chunk, C.NumQoHeads};
  const DLDataType F32{kDLFloat, 32, 1};
  TempQ = RowBuffer(Q, C.DType);
  TempK = RowBuffer(KV, C.DType);
  TempV = RowBuffer(KV, C.DType);
  TempOut = RowBuffer(Q, C.DType);
  TempLse = RowBuffer(Lse, F32);
  MergedLse = RowBuffer(Lse, F32);
  LayerDone.assign(static_cast<size_t>(C.NumLayers), false);
}

int32_t PagedKVCacheObj::takeFreeBlock() {
  if (!FreeBlocks.empty()) {
    int32_t Idx = FreeBlocks.back();
    FreeBlocks.pop_back();
    Blocks[static_cast<size_t>(Idx)].reset();
    return Idx;
  }
  Blocks.emplace_back();
  return static_cast<int32_t>(Blocks.size() - 1);
}

int32_t PagedKVCacheObj::takeFreePage(const char *Fn) {
  if (FreePages.empty()) // callers check first; this is the last guard
    fail(Fn, "The KV cache is full. No page can be allocated.");
  int32_t P = FreePages.back();
  FreePages.pop_back();
  return P;
}

void PagedKVCacheObj::blockTrace(const KVSequence &S,
                                 std::vector<int32_t> &Out) const {
  Out.clear();
  for (int32_t B = S.LastBlock; B != -1;
       B = Blocks[static_cast<size_t>(B)].ParentIdx)
    Out.push_back(B);
  std::reverse(Out.begin(), Out.end());
}

std::vector<int32_t> PagedKVCacheObj::blockTrace(const KVSequence &S) const {
  std::vector<int32_t> Trace;
  blockTrace(S, Trace);
  return Trace;
}

KVSequence &PagedKVCacheObj::sequence(const char *Fn, int64_t SeqId) {
  auto It = Sequences.find(SeqId);
  if (It == Sequences.end())
    fail(Fn, fmt::format("The sequence \"{}\" cannot be found in KV cache.",
                         SeqId));
  return It->second;
}

void PagedKVCacheObj::noForward(const char *Fn, const char *What) const {
  if (InForward)
    fail(Fn, fmt::format("cannot {} between kv_state_begin_forward and "
                         "kv_state_end_forward",
                         What));
}

void PagedKVCacheObj::copySinglePage(int32_t Src, int32_t Dst, int64_t Length) {
  for (Tensor &P : Pages)
    callKernel(Kernels.CopySinglePage, P, Src, Dst, Length);
}

//===----------------------------------------------------------------------===//
// Sequences.
//===----------------------------------------------------------------------===//

void PagedKVCacheObj::clear(const char *Fn) {
  noForward(Fn, "clear the cache");
  Sequences.clear();
  FreePages.clear();
  for (int64_t P = Config.NumTotalPages - 1; P >= 0; --P)
    FreePages.push_back(static_cast<int32_t>(P));
  Blocks.clear();
  FreeBlocks.clear();
}

void PagedKVCacheObj::addSequence(const char *Fn, int64_t SeqId) {
  noForward(Fn, "add a sequence");
  if (Sequences.count(SeqId))
    fail(Fn,
         fmt::format("The sequence \"{}\" is already in the KV cache.", SeqId));
  int32_t B = takeFreeBlock();
  ++Blocks[static_cast<size_t>(B)].ExternalRefs;
  Sequences.emplace(SeqId, KVSequence{B, 0});
}

void PagedKVCacheObj::removeSequence(const char *Fn, int64_t SeqId) {
  noForward(Fn, "remove a sequence");
  KVSequence &S = sequence(Fn, SeqId);
  int32_t B = S.LastBlock;
  // Free the blocks only this sequence holds, then drop its hold on the
  // first shared one.
  while (B != -1 && Blocks[static_cast<size_t>(B)].ExternalRefs == 1) {
    KVBlock &Block = Blocks[static_cast<size_t>(B)];
    FreePages.insert(FreePages.end(), Block.PageIds.begin(),
                     Block.PageIds.end());
    FreeBlocks.push_back(B);
    B = Block.ParentIdx;
  }
  if (B != -1)
    --Blocks[static_cast<size_t>(B)].ExternalRefs;
  Sequences.erase(SeqId);
}

void PagedKVCacheObj::forkSequence(const char *Fn, int64_t ParentId,
                                   int64_t ChildId, int64_t ForkPos) {
  noForward(Fn, "fork a sequence");
  auto PIt = Sequences.find(ParentId);
  if (PIt == Sequences.end())
    fail(Fn, fmt::format("The parent sequence \"{}\" cannot be found in KV "
                         "cache.",
                         ParentId));
  if (Sequences.count(ChildId))
    fail(Fn, fmt::format("The child sequence \"{}\" is already in the KV "
                         "cache.",
                         ChildId));
  KVSequence &Parent = PIt->second;
  if (ForkPos < -1)
    fail(Fn, fmt::format("The forked position {} should be non-negative, or "
                         "-1 for last position as default.",
                         ForkPos));
  if (ForkPos > Parent.SeqLength)
    fail(Fn, fmt::format("The forked position {} should not exceed the total "
                         "length {} of parent sequence.",
                         ForkPos, Parent.SeqLength));
  if (ForkPos == -1)
    ForkPos = Parent.SeqLength;
  const int64_t PS = Config.PageSize;
  if (ForkPos % PS != 0 && FreePages.empty())
    fail(Fn, "The KV cache is full. No page can be allocated.");

  if (ForkPos == Parent.SeqLength && ForkPos % PS == 0 &&
      Blocks[static_cast<size_t>(Parent.LastBlock)].SeqLength > 0) {
    // The parent goes on in a new empty block, so its next tokens do not
    // land in the block the child shares.
    int32_t New = takeFreeBlock();
    KVBlock &NB = Blocks[static_cast<size_t>(New)];
    NB.StartPos = Parent.SeqLength;
    NB.ParentIdx = Parent.LastBlock;
    NB.ExternalRefs = 1;
    Parent.LastBlock = New;
  }

  int32_t Child = takeFreeBlock();
  std::vector<int32_t> Trace = blockTrace(Parent);
  int64_t InBlock = ForkPos;
  for (int32_t Forked : Trace) {
    KVBlock *FB = &Blocks[static_cast<size_t>(Forked)];
    if (Forked != Trace.back() && FB->SeqLength <= InBlock) {
      InBlock -= FB->SeqLength;
      continue;
    }
    const int32_t InPage = static_cast<int32_t>(InBlock % PS);
    const int32_t Moved = static_cast<int32_t>(InBlock) - InPage;
    const int32_t MovedPages = static_cast<int32_t>(Moved / PS);
    if (MovedPages == 0) {
      // Forked in the block's first page: the child continues from the
      // block's parent.
      int32_t P = FB->ParentIdx;
      if (P != -1)
        ++Blocks[static_cast<size_t>(P)].ExternalRefs;
      Blocks[static_cast<size_t>(Child)].ParentIdx = P;
    } else {
      // Split the block: its leading pages become a new parent of both.
      int32_t NewParent = takeFreeBlock();
      FB = &Blocks[static_cast<size_t>(Forked)];
      KVBlock &NP = Blocks[static_cast<size_t>(NewParent)];
      NP.ParentIdx = FB->ParentIdx;
      FB->ParentIdx = NewParent;
      Blocks[static_cast<size_t>(Child)].ParentIdx = NewParent;
      NP.ExternalRefs = 2;
      NP.PageIds.assign(FB->PageIds.begin(), FB->PageIds.begin() + MovedPages);
      FB->PageIds.erase(FB->PageIds.begin(), FB->PageIds.begin() + MovedPages);
      NP.StartPos = FB->StartPos;
      FB->StartPos += Moved;
      NP.SeqLength = Moved;
      FB->SeqLength -= Moved;
    }
    KVBlock &CB = Blocks[static_cast<size_t>(Child)];
    CB.StartPos = static_cast<int32_t>(ForkPos - InPage);
    CB.SeqLength = InPage;
    if (InPage > 0) {
      // The partly shared page is copied into the child's own page.
      int32_t Src = Blocks[static_cast<size_t>(Forked)].PageIds[0];
      int32_t Dst = takeFreePage(Fn);
      Blocks[static_cast<size_t>(Child)].PageIds.push_back(Dst);
      copySinglePage(Src, Dst, InPage);
    }
    break;
  }
  KVSequence S{Child, 0};
  ++Blocks[static_cast<size_t>(Child)].ExternalRefs;
  for (int32_t B = Child; B != -1; B = Blocks[static_cast<size_t>(B)].ParentIdx)
    S.SeqLength += Blocks[static_cast<size_t>(B)].SeqLength;
  Sequences.emplace(ChildId, S);
}

void PagedKVCacheObj::popN(const char *Fn, int64_t SeqId, int64_t N) {
  noForward(Fn, "pop from a sequence");
  KVSequence &S = sequence(Fn, SeqId);
  if (N < 0)
    fail(Fn, fmt::format("The length of popping {} cannot be negative.", N));
  if (N > S.SeqLength)
    fail(Fn, fmt::format("The sequence only has length {}, while the length "
                         "of pop is {} which exceeds the whole sequence "
                         "length.",
                         S.SeqLength, N));
  if (N == 0)
    return;
  // Walk without changing anything first: a pop into a shared block forks,
  // which may need a page.
  {
    int64_t Left = N;
    size_t Freed = 0;
    for (int32_t B = S.LastBlock;
         B != -1 && Blocks[static_cast<size_t>(B)].ExternalRefs == 1;) {
      const KVBlock &Block = Blocks[static_cast<size_t>(B)];
      if (Left <= Block.SeqLength) {
        Left = 0;
        break;
      }
      Left -= Block.SeqLength;
      Freed += Block.PageIds.size();
      B = Block.ParentIdx;
    }
    if (Left > 0 && (S.SeqLength - N) % Config.PageSize != 0 &&
        FreePages.size() + Freed == 0)
      fail(Fn, "The KV cache is full. No page can be allocated.");
    if (Left > 0 && Sequences.count(-1 - SeqId))
      fail(Fn, fmt::format("sequence id {} (used internally to pop from a "
                           "shared prefix) is in use",
                           -1 - SeqId));
  }
  int32_t B = S.LastBlock;
  while (B != -1 && Blocks[static_cast<size_t>(B)].ExternalRefs == 1) {
    KVBlock &Block = Blocks[static_cast<size_t>(B)];
    if (N > Block.SeqLength) {
      N -= Block.SeqLength;
      S.SeqLength -= Block.SeqLength;
      FreePages.insert(FreePages.end(), Block.PageIds.begin(),
                       Block.PageIds.end());
      FreeBlocks.push_back(B);
      B = Block.ParentIdx;
      S.LastBlock = B;
      continue;
    }
    size_t Keep = static_cast<size_t>(
        (Block.SeqLength - N + Config.PageSize - 1) / Config.PageSize);
    while (Block.PageIds.size() > Keep) {
      FreePages.push_back(Block.PageIds.back());
      Block.PageIds.pop_back();
    }
    S.SeqLength -= static_cast<int32_t>(N);
    Block.SeqLength -= static_cast<int32_t>(N);
    N = 0;
    break;
  }
  if (N) {
    // The rest lies in a shared block: fork a copy of the kept prefix under
    // a temporary id, drop the sequence, and give the copy its id.
    const int64_t TempId = -1 - SeqId; // checked above
    forkSequence(Fn, SeqId, TempId, S.SeqLength - N);
    removeSequence(Fn, SeqId);
    KVSequence Moved = Sequences.at(TempId);
    Sequences.erase(TempId);
    Sequences.emplace(SeqId, Moved);
  }
}

bool PagedKVCacheObj::empty() const {
  return Sequences.empty() && FreeBlocks.size() == Blocks.size() &&
         FreePages.size() == static_cast<size_t>(Config.NumTotalPages);
}

int64_t PagedKVCacheObj::totalSequenceLength() const {
  int64_t Total = 0;
  for (const auto &[Id, S] : Sequences)
    Total += S.SeqLength;
  return Total;
}

void PagedKVCacheObj::debugGetKV(const char *Fn, int64_t SeqId, int64_t Start,
                                 int64_t End, const Tensor &K,
                                 const Tensor &V) {
  if (!Kernels.DebugGetKV.defined())
    fail(Fn, "PageAttentionKVCache requires the `f_debug_get_kv` to be "
             "explicitly passed in when initialization. Please construct the "
             "KV cache with `f_debug_get_kv`.");
  const KVSequence &S = sequence(Fn, SeqId);
  if (Start < 0)
    fail(Fn, fmt::format("DebugGetKV does not accept negative start_pos {}",
                         Start));
  if (End > S.SeqLength)
    fail(Fn, fmt::format("DebugGetKV does not accept out-of-range end_pos {} "
                         "(the sequence has length {})",
                         End, S.SeqLength));
  if (Start >= End)
    fail(Fn, "DebugGetKV does not accept \"start_pos >= end_pos\"");
  for (const Tensor *T : {&K, &V}) {
    const int64_t Want[] = {Config.NumLayers, End - Start, Config.NumKvHeads,
                            Config.HeadDim};
    if (!std::ranges::equal(T->shape(), Want) || T->dtype() != Config.DType)
      fail(Fn, fmt::format("DebugGetKV expects the k_data in layout "
                           "(num_layers, seq_length, num_kv_heads, "
                           "qk_head_dim) = {} of {}, but got {} of {}.",
                           shapeString(Want), dtypeName(Config.DType),
                           shapeString(T->shape()), dtypeName(T->dtype())));
  }
  // Each position's slot in the page pool, for [Start, End) only.
  AuxArray Window;
  int64_t Pos = 0;
  for (int32_t B : blockTrace(S)) {
    const KVBlock &Block = Blocks[static_cast<size_t>(B)];
    for (int32_t I = 0; I < Block.SeqLength; ++I, ++Pos)
      if (Pos >= Start && Pos < End)
        Window.push(Block.PageIds[static_cast<size_t>(I / Config.PageSize)] *
                        static_cast<int32_t>(Config.PageSize) +
                    static_cast<int32_t>(I % Config.PageSize));
  }
  Tensor Positions = Window.toTensor();
  for (int64_t L = 0; L < Config.NumLayers; ++L)
    callKernel(Kernels.DebugGetKV, Pages[static_cast<size_t>(L)], Positions, K,
               V, L);
}

} // namespace vmjit::vm::builtin

void vmjit::vm::setBuiltinKernelObserver(KernelCallObserver O,
                                         void *Context) noexcept {
  builtin::Observer = O;
  builtin::ObserverContext = Context;
  builtin::HasKernelObserver = O != nullptr;
}
