//===- lib/vm/fold_constant_calls.cpp - Calls on constants ------*- C++ -*-===//
//
// The folding of bindParams (vm/bind_params.h): a kernel call whose effects
// prove it reads only constants and writes only fresh allocations runs now,
// and its outputs become constants; an element of a bound tuple read with
// an immediate index becomes a constant. Every rule is checked on the
// function's blocks and register uses (function_code.h), conservatively:
// what is not proven is not folded.
//
//===----------------------------------------------------------------------===//

#include "fold_constant_calls.h"

#include "vmjit/runtime/array.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"

#include <fmt/format.h>

#include <algorithm>

namespace vmjit::vm {

namespace {

bool isCallOf(const BindState &S, const CodeInstr &C, std::string_view Name) {
  return C.isCall() && !C.Dead &&
         S.Table[size_t(C.Callee)].Kind == FunctionKind::Packed &&
         S.calleeName(C) == Name;
}

/// Whether every read of `R` (at instructions `Readers`) is an argument of
/// a kernel proven to touch only its arguments and not to write that one.
bool onlyReadByKernels(const BindState &S, RegName R,
                       const std::vector<int64_t> &Readers) {
  for (int64_t K : Readers) {
    const CodeInstr &C = S.Code.Instrs[size_t(K)];
    if (!C.isCall())
      return false;
    const std::optional<KernelEffects> E = S.effectsOf(C);
    if (!E || !E->OnlyArgumentMemory)
      return false;
    for (size_t J = 0; J < C.Args.size(); ++J)
      if (C.Args[J] == Arg::reg(R) && writes(E->Args[J]))
        return false;
  }
  return true;
}

/// Reads of `R` after `Instr` (the ones readsConfinedAfter allows).
std::vector<int64_t> readsAfter(const CodeFacts &F, RegName R, int64_t Instr) {
  std::vector<int64_t> Out;
  for (int64_t K : F.readers(R))
    if (K > Instr)
      Out.push_back(K);
  return Out;
}

void replaceReads(BindState &S, RegName R, const std::vector<int64_t> &At,
                  int64_t Const) {
  for (int64_t K : At)
    for (Arg &A : S.Code.Instrs[size_t(K)].Args)
      if (A == Arg::reg(R))
        A = Arg::constant(Const);
}

/// `%R = tuple_getitem($c, imm)` of a bound tuple, read only by calls
/// before R is written again: the element becomes a constant.
bool foldTupleItem(BindState &S, const CodeFacts &F, int64_t I) {
  const CodeInstr &C = S.Code.Instrs[size_t(I)];
  if (!isCallOf(S, C, "vm.builtin.tuple_getitem") || C.Args.size() != 2 ||
      isSpecialRegister(C.Dst) || C.Args[0].kind() != ArgKind::ConstIdx ||
      C.Args[1].kind() != ArgKind::Immediate)
    return false;
  auto Bound = S.BoundConsts.find(C.Args[0].value());
  if (Bound == S.BoundConsts.end())
    return false;
  const std::optional<Array> Tuple = S.constant(Bound->first).as<Array>();
  const int64_t Index = C.Args[1].value();
  if (!Tuple || Index < 0 || Index >= static_cast<int64_t>(Tuple->size()))
    return false;
  const RegName R = C.Dst;
  if (!F.readsConfinedAfter(R, I, -1))
    return false;
  const std::vector<int64_t> Reads = readsAfter(F, R, I);
  for (int64_t K : Reads)
    if (!S.Code.Instrs[size_t(K)].isCall())
      return false;
  const int64_t Const = S.addConstant((*Tuple)[size_t(Index)]);
  S.BoundConsts[Const] =
      fmt::format("element {} of the {}", Index, Bound->second);
  replaceReads(S, R, Reads, Const);
  S.Code.Instrs[size_t(I)].Dead = true;
  S.Folded.push_back({S.funcName(), S.calleeName(C), C.Origin});
  return true;
}

/// The last write of `R` before `Instr` in its block, or -1.
int64_t reachingWrite(const CodeFacts &F, RegName R, int64_t Instr) {
  int64_t D = -1;
  for (int64_t W : F.writers(R))
    if (W < Instr && F.block(W) == F.block(Instr))
      D = W;
  return D;
}

/// Whether `C` is `alloc_tensor(%S, offset, $shape, $dtype)` with constant
/// shape and dtype and the storage a register read nowhere else in it.
bool isFreshAllocation(const BindState &S, const CodeInstr &C) {
  if (!isCallOf(S, C, "vm.builtin.alloc_tensor") || C.Args.size() != 4 ||
      C.Args[0].kind() != ArgKind::Register ||
      isSpecialRegister(C.Args[0].value()) || !isConstantArg(C.Args[1]) ||
      C.Args[2].kind() != ArgKind::ConstIdx ||
      C.Args[3].kind() != ArgKind::ConstIdx)
    return false;
  return S.constant(C.Args[2].value()).as<Shape>() &&
         S.constant(C.Args[3].value()).as<DLDataType>();
}

/// Whether no other tensor of the storage the allocation at `D` cuts the
/// output from may be written while the output's reads (up to `Last`) see
/// it: every other tensor of that storage is read only before `D` or
/// allocated after `Last`, and the storage is used for nothing else.
bool storageUnshared(const BindState &S, const CodeFacts &F, int64_t D,
                     int64_t Last) {
  const RegName St = S.Code.Instrs[size_t(D)].Args[0].value();
  const int64_t Def = reachingWrite(F, St, D);
  if (Def < 0 ||
      !isCallOf(S, S.Code.Instrs[size_t(Def)], "vm.builtin.alloc_storage"))
    return false;
  const int64_t End = F.nextWrite(St, Def);
  for (int64_t E : F.readers(St)) {
    const bool SameBlock = F.block(E) == F.block(Def);
    if (!SameBlock && End < 0)
      return false; // the storage may live on into another block
    if (!SameBlock || E < Def || (End >= 0 && E > End) || E == D)
      continue;
    const CodeInstr &A = S.Code.Instrs[size_t(E)];
    if (!isFreshAllocation(S, A) || A.Args[0] != Arg::reg(St))
      return false;
    if (E > Last)
      continue;
    if (E > D || isSpecialRegister(A.Dst))
      return false;
    for (int64_t K : F.readers(A.Dst))
      if (F.block(K) != F.block(E) || K <= E || K >= D)
        return false;
  }
  return true;
}

/// One output of a kernel call being folded.
struct Output {
  RegName Reg;
  /// The allocation that defines it, and its reads after the call.
  int64_t Alloc;
  std::vector<int64_t> Reads;
};

/// The output `R` of the call at `I`, when it is fresh (bind_params.h).
std::optional<Output> freshOutput(const BindState &S, const CodeFacts &F,
                                  int64_t I, RegName R) {
  if (isSpecialRegister(R))
    return std::nullopt;
  const int64_t D = reachingWrite(F, R, I);
  if (D < 0 || !isFreshAllocation(S, S.Code.Instrs[size_t(D)]) ||
      !F.readsConfinedAfter(R, I, I))
    return std::nullopt;
  Output O{R, D, readsAfter(F, R, I)};
  if (!onlyReadByKernels(S, R, O.Reads))
    return std::nullopt;
  const int64_t Last = O.Reads.empty() ? I : O.Reads.back();
  if (!storageUnshared(S, F, D, Last))
    return std::nullopt;
  return O;
}

Tensor emptyLike(const BindState &S, const CodeInstr &Alloc) {
  const Shape Dims = *S.constant(Alloc.Args[2].value()).as<Shape>();
  return Tensor::empty(Dims.dims(),
                       *S.constant(Alloc.Args[3].value()).as<DLDataType>());
}

/// A kernel call on constants writing fresh allocations: run it now (and
/// never again when it fails: `Failed`).
bool foldKernelCall(BindState &S, const CodeFacts &F, int64_t I,
                    std::vector<char> &Failed) {
  const CodeInstr &C = S.Code.Instrs[size_t(I)];
  if (!C.isCall() || C.Dead || C.Dst != kVoidRegister)
    return false;
  const std::optional<KernelEffects> E = S.effectsOf(C);
  if (!E || !E->OnlyArgumentMemory)
    return false;
  std::vector<Output> Outs;
  for (size_t J = 0; J < C.Args.size(); ++J) {
    if (!writes(E->Args[J])) {
      if (!isConstantArg(C.Args[J]))
        return false;
      continue;
    }
    if (C.Args[J].kind() != ArgKind::Register)
      return false;
    const RegName R = C.Args[J].value();
    if (std::count(C.Args.begin(), C.Args.end(), C.Args[J]) != 1)
      return false;
    std::optional<Output> O = freshOutput(S, F, I, R);
    if (!O)
      return false;
    Outs.push_back(std::move(*O));
  }
  if (Outs.empty())
    return false;
  std::vector<Any> Tensors;
  for (const Output &O : Outs)
    Tensors.emplace_back(emptyLike(S, S.Code.Instrs[size_t(O.Alloc)]));
  if (callAtBindTime(S, C.Callee, C.Args, Tensors)) {
    Failed[size_t(I)] = 1; // the call stays
    return false;
  }
  for (size_t K = 0; K < Outs.size(); ++K)
    replaceReads(S, Outs[K].Reg, Outs[K].Reads, S.addConstant(Tensors[K]));
  S.Code.Instrs[size_t(I)].Dead = true;
  S.Folded.push_back({S.funcName(), S.calleeName(C), C.Origin});
  return true;
}

bool isRemovableDefinition(const BindState &S, const CodeInstr &C) {
  for (std::string_view Name :
       {"vm.builtin.alloc_storage", "vm.builtin.alloc_tensor",
        "vm.builtin.tuple_getitem", "vm.builtin.null_value"})
    if (isCallOf(S, C, Name))
      return true;
  return false;
}

} // namespace

void foldConstantCalls(BindState &S) {
  // A call that failed at bind time is not run again.
  std::vector<char> Failed(S.Code.Instrs.size(), 0);
  for (bool Folded = true; Folded;) {
    Folded = false;
    const CodeFacts F(S.Code, S.NumRegs);
    for (size_t I = 0; I < S.Code.Instrs.size() && !Folded; ++I) {
      if (S.Code.Instrs[I].Dead || Failed[I])
        continue;
      const int64_t At = static_cast<int64_t>(I);
      Folded = foldTupleItem(S, F, At) || foldKernelCall(S, F, At, Failed);
    }
    if (Folded)
      removeUnusedDefinitions(S);
  }
}

void removeUnusedDefinitions(BindState &S) {
  for (bool Changed = true; Changed;) {
    Changed = false;
    const CodeFacts F(S.Code, S.NumRegs);
    for (RegName R = 0; R < S.NumRegs; ++R) {
      if (!F.readers(R).empty() || F.writers(R).empty())
        continue;
      const auto &W = F.writers(R);
      if (!std::all_of(W.begin(), W.end(), [&](int64_t I) {
            return isRemovableDefinition(S, S.Code.Instrs[size_t(I)]);
          }))
        continue;
      for (int64_t I : W)
        S.Code.Instrs[size_t(I)].Dead = true;
      Changed = true;
    }
  }
}

} // namespace vmjit::vm
