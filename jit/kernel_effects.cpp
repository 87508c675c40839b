//===- kernel_effects.cpp - What TVM's kernels read and write -------------===//
//
// See kernel_effects.h. Each function is analyzed under the facts of its
// pointer parameters: a forward fixpoint gives every pointer value a Fact
// (the region it points into, and a byte offset where that matters), then
// every instruction that touches memory is checked against its pointer's
// Fact. Calls of defined functions are analyzed the same way under the
// callers' Facts (memoized).
//
//===----------------------------------------------------------------------===//

#include "kernel_effects.h"

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/Support/ModRef.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdint>
#include <limits>
#include <set>
#include <tuple>

using namespace llvm;

namespace vmjit::jit {
namespace {

constexpr StringRef kEntryPrefix = "__tvm_ffi_";
/// TVMFFIAny: 16 bytes, the value at 8.
constexpr int64_t kAnySize = 16, kAnyValue = 8;
/// Where a Tensor object keeps its DLTensor, and the DLTensor's fields.
constexpr int64_t kTensorInObject = 24, kShape = 24, kStrides = 32;
constexpr int64_t kAnyOffset = std::numeric_limits<int64_t>::min();
/// Fixpoint passes over one function before giving up.
constexpr int kMaxPasses = 64;
/// Nested calls of defined functions followed.
constexpr unsigned kMaxDepth = 16;

/// Where a pointer points.
enum class Region : uint8_t {
  /// No pointer yet (or null, undef).
  Bottom,
  /// The packed arguments (TVMFFIAny[]).
  ArgArray,
  /// What argument Arg's value points to: its DLTensor, or a Tensor object
  /// holding it at 24.
  AnyValue,
  /// Argument Arg's DLTensor.
  Tensor,
  /// Argument Arg's shape or strides array.
  Header,
  /// The data of the arguments in Mask (maybe also Owned or Constant
  /// memory, which need no account).
  Data,
  /// The kernel's own stack or workspace memory (maybe also Constant).
  Owned,
  /// A constant global (never written: that would be undefined).
  Constant,
  /// A mutable global.
  Global,
  /// The entry's result slot.
  Result,
  /// A context slot (Arg: its SlotKind).
  Slot,
  /// A backend function loaded from a context slot (Arg: its SlotKind).
  Backend,
  /// A parallel launch's closure data (Arg: its ClosureTables index).
  Closure,
  /// A parallel launch's TVMParallelGroupEnv (read only).
  LaunchEnv,
  Unknown,
};

enum SlotKind : int32_t {
  AllocSlot,
  FreeSlot,
  ErrorSlot,
  LaunchSlot,
  BarrierSlot,
  OtherSlot
};

struct Fact {
  Region R = Region::Bottom;
  int32_t Arg = -1;
  /// Bytes from the region's start where it matters (ArgArray, AnyValue,
  /// Tensor), else kAnyOffset.
  int64_t Offset = kAnyOffset;
  /// Data: the arguments whose data it may point into.
  uint64_t Mask = 0;

  bool operator==(const Fact &) const = default;
  bool operator<(const Fact &O) const {
    return std::tie(R, Arg, Offset, Mask) <
           std::tie(O.R, O.Arg, O.Offset, O.Mask);
  }
};

Fact fact(Region R, int32_t Arg = -1, int64_t Offset = kAnyOffset) {
  if (R == Region::Data)
    return Arg >= 0 && Arg < 64 ? Fact{R, -1, kAnyOffset, uint64_t(1) << Arg}
                                : Fact{Region::Unknown};
  const bool HasOffset = R == Region::ArgArray || R == Region::AnyValue ||
                         R == Region::Tensor || R == Region::Closure;
  return {R, Arg, HasOffset ? Offset : kAnyOffset};
}

/// Where accesses need no account: the kernel's own memory, constants.
bool isFree(Region R) { return R == Region::Owned || R == Region::Constant; }

/// A pointer to argument K's DLTensor: its value, or 24 past it (TVM
/// picks one by the argument's type index and merges them in a phi).
bool isTensorOf(const Fact &F, int32_t K) {
  return F.Arg == K && ((F.R == Region::AnyValue &&
                         (F.Offset == 0 || F.Offset == kTensorInObject)) ||
                        (F.R == Region::Tensor && F.Offset == 0));
}

Fact join(const Fact &A, const Fact &B) {
  if (A.R == Region::Bottom)
    return B;
  if (B.R == Region::Bottom || A == B)
    return A;
  if (isTensorOf(A, A.Arg) && isTensorOf(B, A.Arg))
    return fact(Region::Tensor, A.Arg, 0);
  // A pointer into one of several tensors' data or the kernel's own memory
  // (TVM selects between inputs, or between an input and a local copy).
  if (A.R == Region::Data && (B.R == Region::Data || isFree(B.R)))
    return {Region::Data, -1, kAnyOffset, A.Mask | B.Mask};
  if (B.R == Region::Data && isFree(A.R))
    return B;
  if (isFree(A.R) && isFree(B.R))
    return fact(Region::Owned);
  if (A.R == B.R && A.Arg == B.Arg)
    return fact(A.R, A.Arg);
  return fact(Region::Unknown);
}

Fact offsetBy(Fact F, std::optional<int64_t> Bytes) {
  if (F.Offset != kAnyOffset)
    F.Offset = Bytes ? F.Offset + *Bytes : kAnyOffset;
  return F;
}

/// What each parallel launch stored into its closure data: byte offset
/// -> the pointer stored there.
using ClosureTables = std::vector<std::map<int64_t, Fact>>;

/// The pointer loaded from memory that `P` points to.
Fact loaded(const Fact &P, const ClosureTables &Closures) {
  switch (P.R) {
  case Region::ArgArray:
    if (P.Offset != kAnyOffset && P.Offset >= 0 &&
        P.Offset % kAnySize == kAnyValue)
      return fact(Region::AnyValue, static_cast<int32_t>(P.Offset / kAnySize),
                  0);
    return fact(Region::Unknown);
  case Region::AnyValue:
    // A DLTensor's data (or shape: a Tensor object's data is at 24 too,
    // taken as data, which only adds reads); a Tensor object's shape and
    // strides, or a DLTensor's strides.
    if (P.Offset == 0 || P.Offset == kTensorInObject)
      return fact(Region::Data, P.Arg);
    if (P.Offset == kStrides || P.Offset == kTensorInObject + kShape ||
        P.Offset == kTensorInObject + kStrides)
      return fact(Region::Header, P.Arg);
    return fact(Region::Unknown);
  case Region::Tensor:
    if (P.Offset == 0)
      return fact(Region::Data, P.Arg);
    if (P.Offset == kShape || P.Offset == kStrides)
      return fact(Region::Header, P.Arg);
    return fact(Region::Unknown);
  case Region::Slot:
    return fact(Region::Backend, P.Arg);
  case Region::Closure: {
    const auto &Table = Closures[P.Arg];
    auto It = Table.find(P.Offset);
    return It == Table.end() ? fact(Region::Unknown) : It->second;
  }
  default:
    return fact(Region::Unknown);
  }
}

SlotKind slotKind(StringRef Name) {
  if (Name == "__TVMBackendAllocWorkspace")
    return AllocSlot;
  if (Name == "__TVMBackendFreeWorkspace")
    return FreeSlot;
  if (Name == "__TVMFFIErrorSetRaisedFromCStr" ||
      Name == "__TVMFFIErrorSetRaisedFromCStrParts")
    return ErrorSlot;
  if (Name == "__TVMBackendParallelLaunch")
    return LaunchSlot;
  if (Name == "__TVMBackendParallelBarrier")
    return BarrierSlot;
  return OtherSlot;
}

bool isErrorFunction(StringRef Name) {
  return Name == "TVMFFIErrorSetRaisedFromCStr" ||
         Name == "TVMFFIErrorSetRaisedFromCStrParts";
}

/// What one function (under its parameters' Facts) does.
struct Summary {
  /// Argument K -> what is done with its data (ArgAccess bits).
  std::map<int32_t, uint8_t> Access;
  /// Touches memory that is not the arguments' nor its own.
  bool Foreign = false;
  /// Something not understood: any argument may be read and written.
  bool Lost = false;
  /// The argument array read at a non-constant offset.
  bool NonConstantIndex = false;
  /// The first reason it is not OnlyArgumentMemory.
  std::string Why;

  void note(bool Summary::*Flag, const Twine &Reason) {
    this->*Flag = true;
    if (Why.empty())
      Why = Reason.str();
  }
  void merge(const Summary &S) {
    for (const auto &[K, A] : S.Access)
      Access[K] |= A;
    Foreign |= S.Foreign;
    Lost |= S.Lost;
    NonConstantIndex |= S.NonConstantIndex;
    if (Why.empty())
      Why = S.Why;
  }
};

/// The function and the instruction (its first 100 characters).
std::string where(const Instruction &I) {
  std::string Text;
  raw_string_ostream OS(Text);
  I.print(OS);
  StringRef Shown = StringRef(Text).trim();
  Shown = Shown.take_front(Shown.find(", !")).take_front(100);
  return (I.getFunction()->getName() + ": '" + Shown + "'").str();
}

class Analyzer {
public:
  explicit Analyzer(Module &M)
      : DL(M.getDataLayout()), TLII(Triple(M.getTargetTriple())), TLI(TLII) {}

  Summary analyze(Function &F, const std::vector<Fact> &Params, unsigned Depth);

private:
  using Key = std::pair<const Function *, std::vector<Fact>>;
  const DataLayout &DL;
  TargetLibraryInfoImpl TLII;
  TargetLibraryInfo TLI;
  std::map<Key, Summary> Done;
  std::set<Key> Active;
  ClosureTables Closures;

  Summary analyzeBody(Function &F, const std::vector<Fact> &Params,
                      unsigned Depth);
};

/// The Facts of one function's values, and the checks of its accesses.
class FunctionFacts {
public:
  FunctionFacts(const DataLayout &DL, const TargetLibraryInfo &TLI,
                const std::vector<Fact> &Params, ClosureTables &Closures)
      : DL(DL), TLI(TLI), Params(Params), Closures(Closures) {}

  /// Runs the fixpoint; false if it did not settle.
  bool solve(Function &F);
  /// What analyzing a defined function under parameter Facts gives.
  using CalleeFn =
      function_ref<Summary(Function &, const std::vector<Fact> &)>;
  /// Checks every instruction of `F`; defined functions called or launched
  /// through `Callee`.
  void check(Function &F, CalleeFn Callee);

  Fact of(const Value *V) const;
  Summary S;

private:
  const DataLayout &DL;
  const TargetLibraryInfo &TLI;
  const std::vector<Fact> &Params;
  ClosureTables &Closures;
  DenseMap<const Value *, Fact> Facts;

  Fact ofConstant(const Constant *C) const;
  Fact transfer(const Instruction &I) const;
  void access(const Fact &P, ModRefInfo MR, const Instruction &I);
  void readsArguments(const CallBase &CB);
  void checkDeclared(const CallBase &CB, const Function &F);
  void checkBackend(const CallBase &CB, const Fact &Backend, CalleeFn Callee);
  void checkLaunch(const CallBase &CB, CalleeFn Callee);
  std::optional<Fact> closureOf(const Value *Data, const CallBase &Launch);
};

Fact FunctionFacts::ofConstant(const Constant *C) const {
  if (isa<ConstantPointerNull>(C) || isa<UndefValue>(C))
    return {};
  if (const auto *G = dyn_cast<GlobalVariable>(C)) {
    if (G->isConstant())
      return fact(Region::Constant);
    StringRef Name = G->getName();
    if (Name.starts_with("__TVM") || Name == "__tvm_ffi__library_ctx")
      return fact(Region::Slot, slotKind(Name));
    return fact(Region::Global);
  }
  if (const auto *GEP = dyn_cast<GEPOperator>(C)) {
    APInt Off(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
    std::optional<int64_t> Bytes;
    if (GEP->accumulateConstantOffset(DL, Off))
      Bytes = Off.getSExtValue();
    return offsetBy(ofConstant(cast<Constant>(GEP->getPointerOperand())),
                    Bytes);
  }
  if (const auto *CE = dyn_cast<ConstantExpr>(C))
    if (CE->getOpcode() == Instruction::BitCast ||
        CE->getOpcode() == Instruction::AddrSpaceCast)
      return ofConstant(CE->getOperand(0));
  return fact(Region::Unknown);
}

Fact FunctionFacts::of(const Value *V) const {
  if (const auto *A = dyn_cast<Argument>(V))
    return A->getArgNo() < Params.size() ? Params[A->getArgNo()]
                                         : fact(Region::Unknown);
  if (const auto *C = dyn_cast<Constant>(V))
    return ofConstant(C);
  auto It = Facts.find(V);
  return It == Facts.end() ? Fact{} : It->second;
}

Fact FunctionFacts::transfer(const Instruction &I) const {
  if (isa<AllocaInst>(I))
    return fact(Region::Owned);
  if (const auto *GEP = dyn_cast<GetElementPtrInst>(&I)) {
    APInt Off(DL.getIndexTypeSizeInBits(GEP->getPointerOperandType()), 0);
    std::optional<int64_t> Bytes;
    if (!GEP->getType()->isVectorTy() && GEP->accumulateConstantOffset(DL, Off))
      Bytes = Off.getSExtValue();
    return offsetBy(of(GEP->getPointerOperand()), Bytes);
  }
  if (const auto *Phi = dyn_cast<PHINode>(&I)) {
    Fact F;
    for (const Value *In : Phi->incoming_values())
      F = join(F, of(In));
    return F;
  }
  if (const auto *Sel = dyn_cast<SelectInst>(&I))
    return join(of(Sel->getTrueValue()), of(Sel->getFalseValue()));
  if (isa<BitCastInst>(I) || isa<AddrSpaceCastInst>(I) || isa<FreezeInst>(I))
    return of(I.getOperand(0));
  // A vector of pointers loaded would hold several arguments' pointers.
  if (const auto *L = dyn_cast<LoadInst>(&I))
    return L->getType()->isVectorTy() ? fact(Region::Unknown)
                                      : loaded(of(L->getPointerOperand()),
                                               Closures);
  if (const auto *II = dyn_cast<IntrinsicInst>(&I))
    if (II->getIntrinsicID() == Intrinsic::ptrmask)
      return offsetBy(of(II->getArgOperand(0)), std::nullopt);
  if (const auto *CB = dyn_cast<CallBase>(&I)) {
    const Fact Callee = of(CB->getCalledOperand());
    if (Callee.R == Region::Backend && Callee.Arg == AllocSlot)
      return fact(Region::Owned);
  }
  if (isa<ExtractElementInst>(I))
    return offsetBy(of(I.getOperand(0)), std::nullopt);
  if (isa<InsertElementInst>(I) || isa<ShuffleVectorInst>(I))
    return offsetBy(join(of(I.getOperand(0)), of(I.getOperand(1))),
                    std::nullopt);
  return fact(Region::Unknown);
}

bool FunctionFacts::solve(Function &F) {
  for (int Pass = 0; Pass < kMaxPasses; ++Pass) {
    bool Changed = false;
    for (Instruction &I : instructions(F)) {
      if (!I.getType()->isPtrOrPtrVectorTy())
        continue;
      Fact &Slot = Facts[&I];
      const Fact New = join(Slot, transfer(I));
      if (New != Slot) {
        Slot = New;
        Changed = true;
      }
    }
    if (!Changed)
      return true;
  }
  return false;
}

void FunctionFacts::access(const Fact &P, ModRefInfo MR, const Instruction &I) {
  if (!isModOrRefSet(MR))
    return;
  switch (P.R) {
  case Region::Bottom:
  case Region::Owned:
    return;
  case Region::Data:
    for (int32_t K = 0; K < 64; ++K)
      if (P.Mask >> K & 1)
        S.Access[K] |= static_cast<uint8_t>((isRefSet(MR) ? 1 : 0) |
                                            (isModSet(MR) ? 2 : 0));
    return;
  case Region::ArgArray:
    if (P.Offset == kAnyOffset)
      S.note(&Summary::NonConstantIndex,
             where(I) + " indexes the argument array at a non-constant "
                        "offset");
    [[fallthrough]];
  case Region::AnyValue:
  case Region::Tensor:
  case Region::Header:
  case Region::Constant:
  case Region::Slot:
  case Region::Closure:
  case Region::LaunchEnv:
    if (isModSet(MR))
      S.note(&Summary::Lost, where(I) + " writes an argument's header, a "
                                        "constant or a context slot");
    return;
  case Region::Global:
    S.note(&Summary::Foreign, where(I) + " touches a mutable global");
    return;
  case Region::Result:
    S.note(&Summary::Foreign, where(I) + " touches the result slot");
    return;
  case Region::Backend:
  case Region::Unknown:
    S.note(&Summary::Lost,
           where(I) + " dereferences a pointer of unknown origin");
    return;
  }
}

/// A call that reads what its pointer arguments point to (raising an
/// error: the message's parts).
void FunctionFacts::readsArguments(const CallBase &CB) {
  for (const Use &A : CB.args())
    if (A->getType()->isPtrOrPtrVectorTy())
      access(of(A), ModRefInfo::Ref, CB);
}

/// A call of a declared function: by name (raising errors, math), else
/// by its memory attributes.
void FunctionFacts::checkDeclared(const CallBase &CB, const Function &F) {
  if (isErrorFunction(F.getName()))
    return readsArguments(CB);
  // A math function of the C library (floating point in and out, no
  // pointer): only errno besides its arguments (not rand, drand48).
  LibFunc LF;
  auto IsFP = [](const Argument &A) { return A.getType()->isFPOrFPVectorTy(); };
  auto IsPtr = [](const Argument &A) {
    return A.getType()->isPtrOrPtrVectorTy();
  };
  const bool Math = TLI.getLibFunc(F, LF) && !F.isVarArg() &&
                    F.getReturnType()->isFPOrFPVectorTy() &&
                    any_of(F.args(), IsFP) && none_of(F.args(), IsPtr);
  if (Math)
    return;
  if (const auto *II = dyn_cast<IntrinsicInst>(&CB)) {
    if (II->getIntrinsicID() == Intrinsic::masked_gather)
      return access(of(II->getArgOperand(0)), ModRefInfo::Ref, CB);
    if (II->getIntrinsicID() == Intrinsic::masked_scatter)
      return access(of(II->getArgOperand(1)), ModRefInfo::Mod, CB);
  }
  const MemoryEffects ME = CB.getMemoryEffects();
  const MemoryEffects Other =
      ME.getWithoutLoc(IRMemLocation::ArgMem)
          .getWithoutLoc(IRMemLocation::InaccessibleMem);
  if (!Other.doesNotAccessMemory())
    return S.note(&Summary::Lost, where(CB) + " calls " + F.getName() +
                                      ", which may touch any memory");
  const ModRefInfo ArgMR = ME.getModRef(IRMemLocation::ArgMem);
  for (unsigned I = 0; I < CB.arg_size(); ++I) {
    if (!CB.getArgOperand(I)->getType()->isPtrOrPtrVectorTy())
      continue;
    ModRefInfo MR = ArgMR;
    if (CB.doesNotAccessMemory(I))
      MR = ModRefInfo::NoModRef;
    else if (CB.onlyReadsMemory(I))
      MR &= ModRefInfo::Ref;
    else if (CB.onlyWritesMemory(I))
      MR &= ModRefInfo::Mod;
    access(of(CB.getArgOperand(I)), MR, CB);
  }
}

/// A call of a backend function loaded from a context slot.
void FunctionFacts::checkBackend(const CallBase &CB, const Fact &Backend,
                                 CalleeFn Callee) {
  switch (Backend.Arg) {
  case ErrorSlot:
    return readsArguments(CB);
  case AllocSlot:
  case BarrierSlot:
    return;
  case FreeSlot:
    for (const Use &A : CB.args())
      if (A->getType()->isPtrOrPtrVectorTy() && of(A).R != Region::Owned &&
          of(A).R != Region::Bottom)
        S.note(&Summary::Lost,
               where(CB) + " frees memory that is not a workspace");
    return;
  case LaunchSlot:
    return checkLaunch(CB, Callee);
  default:
    S.note(&Summary::Lost, where(CB) + " calls a backend function other "
                                       "than workspaces, errors and "
                                       "parallel launches");
  }
}

/// The closure data `Data` of parallel launch `Launch` (TVM's: a stack
/// struct of the captured values, stored field by field), as a Closure
/// Fact whose table holds the pointers stored into it; null data gives
/// Bottom; anything else done with it (its address stored, passed
/// elsewhere, written at a non-constant offset) gives none.
std::optional<Fact> FunctionFacts::closureOf(const Value *Data,
                                             const CallBase &Launch) {
  if (isa<ConstantPointerNull>(Data))
    return Fact{};
  if (!isa<AllocaInst>(Data))
    return std::nullopt;
  std::map<int64_t, Fact> Table;
  SmallVector<std::pair<const Value *, int64_t>, 8> Work = {{Data, 0}};
  while (!Work.empty()) {
    auto [V, Off] = Work.pop_back_val();
    for (const User *U : V->users()) {
      if (const auto *GEP = dyn_cast<GetElementPtrInst>(U)) {
        APInt C(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
        if (GEP->getType()->isVectorTy() ||
            !GEP->accumulateConstantOffset(DL, C))
          return std::nullopt;
        Work.push_back({GEP, Off + C.getSExtValue()});
      } else if (const auto *St = dyn_cast<StoreInst>(U)) {
        const Value *Stored = St->getValueOperand();
        // Its address stored escapes; a vector or aggregate may hold
        // pointers not tracked here.
        if (Stored == V || Stored->getType()->isVectorTy() ||
            Stored->getType()->isAggregateType())
          return std::nullopt;
        if (Stored->getType()->isPointerTy())
          Table[Off] = join(Table[Off], of(Stored));
      } else if (const auto *II = dyn_cast<IntrinsicInst>(U);
                 II && II->isLifetimeStartOrEnd()) {
        continue;
      } else if (!isa<LoadInst>(U) &&
                 !(U == &Launch && Launch.getArgOperand(1) == V &&
                   Launch.getArgOperand(0) != V)) {
        return std::nullopt;
      }
    }
  }
  Closures.push_back(std::move(Table));
  return fact(Region::Closure, static_cast<int32_t>(Closures.size() - 1), 0);
}

/// A parallel launch `TVMBackendParallelLaunch(lambda, cdata, n)`: the
/// lambda `i32 (i32 task, ptr env, ptr cdata)` analyzed with the pointers
/// stored into its closure data.
void FunctionFacts::checkLaunch(const CallBase &CB, CalleeFn Callee) {
  const auto *Lambda =
      CB.arg_size() == 3
          ? dyn_cast<Function>(CB.getArgOperand(0)->stripPointerCasts())
          : nullptr;
  std::optional<Fact> Data;
  if (Lambda && !Lambda->isDeclaration() && Lambda->arg_size() == 3)
    Data = closureOf(CB.getArgOperand(1), CB);
  if (!Data)
    return S.note(&Summary::Lost, where(CB) + " launches code or closure "
                                              "data not understood");
  S.merge(Callee(*const_cast<Function *>(Lambda),
                 {Fact{}, fact(Region::LaunchEnv), *Data}));
}

void FunctionFacts::check(Function &F, CalleeFn Callee) {
  for (Instruction &I : instructions(F)) {
    if (isa<DbgInfoIntrinsic>(I) || !I.mayReadOrWriteMemory())
      continue;
    if (const auto *L = dyn_cast<LoadInst>(&I)) {
      access(of(L->getPointerOperand()), ModRefInfo::Ref, I);
    } else if (const auto *St = dyn_cast<StoreInst>(&I)) {
      access(of(St->getPointerOperand()), ModRefInfo::Mod, I);
    } else if (const auto *RMW = dyn_cast<AtomicRMWInst>(&I)) {
      access(of(RMW->getPointerOperand()), ModRefInfo::ModRef, I);
    } else if (const auto *CX = dyn_cast<AtomicCmpXchgInst>(&I)) {
      access(of(CX->getPointerOperand()), ModRefInfo::ModRef, I);
    } else if (isa<FenceInst>(I)) {
      continue;
    } else if (const auto *CB = dyn_cast<CallBase>(&I)) {
      const Function *Target = CB->getCalledFunction();
      if (Target && !Target->isDeclaration()) {
        std::vector<Fact> Args;
        for (const Use &A : CB->args())
          Args.push_back(A->getType()->isPtrOrPtrVectorTy() ? of(A) : Fact{});
        S.merge(Callee(*const_cast<Function *>(Target), Args));
      } else if (Target) {
        checkDeclared(*CB, *Target);
      } else if (const Fact C = of(CB->getCalledOperand());
                 C.R == Region::Backend) {
        checkBackend(*CB, C, Callee);
      } else {
        S.note(&Summary::Lost, where(I) + " calls through a pointer");
      }
    } else {
      S.note(&Summary::Lost, where(I) + " touches memory");
    }
  }
}

Summary Analyzer::analyze(Function &F, const std::vector<Fact> &Params,
                          unsigned Depth) {
  Key K{&F, Params};
  if (auto It = Done.find(K); It != Done.end())
    return It->second;
  Summary S;
  if (Active.count(K) || Depth > kMaxDepth || F.isVarArg()) {
    S.note(&Summary::Lost, F.getName() + " is recursive, variadic or "
                                         "nested too deeply");
    return S;
  }
  Active.insert(K);
  S = analyzeBody(F, Params, Depth);
  Active.erase(K);
  return Done[K] = S;
}

Summary Analyzer::analyzeBody(Function &F, const std::vector<Fact> &Params,
                              unsigned Depth) {
  FunctionFacts FF(DL, TLI, Params, Closures);
  if (!FF.solve(F)) {
    FF.S.note(&Summary::Lost, F.getName() + ": the pointer facts did not "
                                            "settle");
    return FF.S;
  }
  FF.check(F, [&](Function &Callee, const std::vector<Fact> &Args) {
    return analyze(Callee, Args, Depth + 1);
  });
  return FF.S;
}

/// The argument count the entry checks `num_args` against, if one.
std::optional<int32_t> fixedArgCount(const Function &Entry) {
  std::optional<int32_t> N;
  for (const User *U : Entry.getArg(2)->users()) {
    const auto *Cmp = dyn_cast<ICmpInst>(U);
    if (!Cmp || !Cmp->isEquality())
      continue;
    const auto *C = dyn_cast<ConstantInt>(Cmp->getOperand(1));
    if (!C)
      C = dyn_cast<ConstantInt>(Cmp->getOperand(0));
    if (!C || (N && *N != C->getSExtValue()))
      return std::nullopt;
    N = static_cast<int32_t>(C->getSExtValue());
  }
  return N;
}

bool isSafeCallEntry(const Function &F) {
  FunctionType *T = F.getFunctionType();
  return !F.isDeclaration() && !T->isVarArg() && T->getNumParams() == 4 &&
         T->getParamType(0)->isPointerTy() &&
         T->getParamType(1)->isPointerTy() &&
         T->getParamType(2)->isIntegerTy(32) &&
         T->getParamType(3)->isPointerTy();
}

/// The entry's Summary turned into KernelEffects.
KernelEffects effectsOf(const Summary &S, std::optional<int32_t> N,
                        std::string &Why) {
  Why = S.Why;
  KernelEffects E;
  const bool InRange = S.Access.empty() || (N && S.Access.begin()->first >= 0 &&
                                            S.Access.rbegin()->first < *N);
  if (S.NonConstantIndex || !InRange) {
    if (Why.empty())
      Why = "the argument count is not fixed";
    return E;
  }
  E.OnlyArgumentMemory = !S.Foreign && !S.Lost;
  for (int32_t K = 0; N && K < *N; ++K) {
    auto It = S.Access.find(K);
    const uint8_t A = S.Lost ? 3 : It == S.Access.end() ? 0 : It->second;
    E.Args.push_back(static_cast<ArgAccess>(A));
  }
  return E;
}

} // namespace

std::map<std::string, KernelEffects>
analyzeKernelEffects(Module &M, const std::vector<std::string> &Entries,
                     std::map<std::string, std::string> *Reasons) {
  Analyzer A(M);
  std::map<std::string, KernelEffects> Out;
  for (const std::string &Name : Entries) {
    Function *F = M.getFunction((kEntryPrefix + Name).str());
    std::string Why;
    if (!F || !isSafeCallEntry(*F)) {
      Out[Name] = KernelEffects{};
      Why = "no safe-call entry __tvm_ffi_" + Name;
    } else {
      const std::vector<Fact> Params = {fact(Region::Unknown),
                                        fact(Region::ArgArray, -1, 0),
                                        {},
                                        fact(Region::Result)};
      Out[Name] = effectsOf(A.analyze(*F, Params, 0), fixedArgCount(*F), Why);
    }
    if (Reasons && !Why.empty())
      (*Reasons)[Name] = Why;
  }
  return Out;
}

} // namespace vmjit::jit
