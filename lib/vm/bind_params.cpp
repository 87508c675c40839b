//===- lib/vm/bind_params.cpp - Binding a function's parameters -*- C++ -*-===//
//
// bindParams (vm/bind_params.h): the bound parameters leave the signature
// (the others keep their order and become registers 0..m-1; a bound one
// becomes a plain register after them), their reads become reads of new
// constants, the function's checks of them run once, the calls on
// constants are folded (fold_constant_calls.cpp) and no kernel may write
// a bound value or a constant.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/bind_params.h"

#include "fold_constant_calls.h"
#include "function_code.h"

#include "vmjit/bytecode/verifier.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace vmjit::vm {

namespace {

[[noreturn]] void bindError(const std::string &Message) {
  throwError("BindError", Message);
}

int64_t boundFunction(const Executable &Exe, std::string_view Func) {
  const std::optional<int64_t> F = Exe.findFunction(Func);
  if (!F)
    bindError(fmt::format("bind_params: no function '{}'", Func));
  if (Exe.function(*F).Kind != FunctionKind::Bytecode)
    bindError(fmt::format("bind_params: function '{}' is a {} function, not "
                          "a bytecode function",
                          Func, functionKindName(Exe.function(*F).Kind)));
  return *F;
}

std::string paramName(const FunctionInfo &F, int64_t I) {
  return size_t(I) < F.ParamNames.size() && !F.ParamNames[size_t(I)].empty()
             ? F.ParamNames[size_t(I)]
             : fmt::format("#{}", I);
}

/// The parameter index of each binding.
std::vector<int64_t> resolveParams(const FunctionInfo &F,
                                   std::span<const ParamBinding> Params) {
  std::vector<int64_t> Out;
  for (const ParamBinding &P : Params) {
    int64_t I = P.Index;
    if (!P.Name.empty()) {
      auto It = std::find(F.ParamNames.begin(), F.ParamNames.end(), P.Name);
      if (It == F.ParamNames.end())
        bindError(
            fmt::format("bind_params: function '{}' has no parameter '{}' (its "
                        "parameters: {})",
                        F.Name, P.Name, fmt::join(F.ParamNames, ", ")));
      I = It - F.ParamNames.begin();
    } else if (I < 0 || I >= F.NumParams) {
      bindError(fmt::format("bind_params: function '{}' has no parameter {} "
                            "(it has {})",
                            F.Name, I, F.NumParams));
    }
    if (std::find(Out.begin(), Out.end(), I) != Out.end())
      bindError(fmt::format("bind_params: function '{}': parameter '{}' is "
                            "bound twice",
                            F.Name, paramName(F, I)));
    Out.push_back(I);
  }
  return Out;
}

/// Binding changes the function's signature: nothing else may call it.
void checkNotCalled(const Executable &Exe, int64_t Func) {
  for (size_t G = 0; G < Exe.functions().size(); ++G) {
    const FunctionInfo &F = Exe.functions()[G];
    if (F.Kind != FunctionKind::Bytecode)
      continue;
    for (int64_t I = F.StartInstr; I < F.EndInstr; ++I) {
      const InstrView V = Exe.instr(I);
      if (V.opcode() != Opcode::Call)
        continue;
      bool Refers = V.callFunc() == Func;
      for (int64_t A = 0; A < V.callNumArgs(); ++A)
        Refers |= V.callArg(A) == Arg::func(Func);
      if (Refers)
        bindError(fmt::format("bind_params: function '{}' is used by "
                              "function '{}', instruction {}: the parameters "
                              "of a function another one calls cannot be "
                              "bound",
                              Exe.function(Func).Name, F.Name,
                              I - F.StartInstr));
    }
  }
}

/// Renumbers the registers: unbound parameters first, in order, then the
/// bound ones; the other registers keep their numbers.
void renameRegisters(FunctionCode &Code, const std::vector<RegName> &Map) {
  auto Rename = [&](RegName R) {
    return R >= 0 && size_t(R) < Map.size() ? Map[size_t(R)] : R;
  };
  for (CodeInstr &C : Code.Instrs) {
    C.Dst = Rename(C.Dst);
    C.Reg = C.Op == Opcode::Ret || C.Op == Opcode::If ? Rename(C.Reg) : C.Reg;
    for (Arg &A : C.Args)
      if (A.kind() == ArgKind::Register)
        A = Arg::reg(Rename(A.value()));
  }
}

/// The index of packed function `Name` in the table, added if absent.
int64_t packedFunction(std::vector<FunctionInfo> &Table, std::string Name) {
  for (size_t F = 0; F < Table.size(); ++F)
    if (Table[F].Name == Name)
      return static_cast<int64_t>(F);
  FunctionInfo Info;
  Info.Kind = FunctionKind::Packed;
  Info.Name = std::move(Name);
  Table.push_back(std::move(Info));
  return static_cast<int64_t>(Table.size()) - 1;
}

/// Reads of bound register `R` that only its entry value reaches become
/// reads of constant `Const`; if any other read is left, the prologue
/// copies the constant into `R`.
void substituteBound(BindState &S, RegName R, int64_t Const) {
  const CodeFacts Facts(S.Code, S.NumRegs);
  bool NeedsRegister = false;
  for (int64_t I : Facts.readers(R)) {
    CodeInstr &C = S.Code.Instrs[size_t(I)];
    if (!C.isCall() || Facts.mayBeRedefinedAt(R, I)) {
      NeedsRegister = true;
      continue;
    }
    for (Arg &A : C.Args)
      if (A == Arg::reg(R))
        A = Arg::constant(Const);
  }
  if (!NeedsRegister)
    return;
  CodeInstr Copy;
  Copy.Op = Opcode::Call;
  Copy.Dst = R;
  Copy.Callee = packedFunction(S.Table, "vm.builtin.copy");
  Copy.Args = {Arg::constant(Const)};
  S.Code.Prologue.push_back(std::move(Copy));
}

bool isParamCheck(std::string_view Name) {
  return Name == "vm.builtin.check_tensor_info" ||
         Name == "vm.builtin.check_shape_info" ||
         Name == "vm.builtin.check_tuple_info" ||
         Name == "vm.builtin.match_shape";
}

/// Runs the function's checks of bound values (all their arguments known:
/// constants, immediates, match_shape's %void heap) and removes them.
void runParamChecks(BindState &S) {
  for (CodeInstr &C : S.Code.Instrs) {
    if (!C.isCall() || C.Dst != kVoidRegister || C.Args.empty() ||
        !isParamCheck(S.calleeName(C)) ||
        C.Args[0].kind() != ArgKind::ConstIdx ||
        !S.BoundConsts.count(C.Args[0].value()))
      continue;
    const bool Known = std::all_of(C.Args.begin(), C.Args.end(), [](Arg A) {
      return isConstantArg(A) || A == Arg::reg(kVoidRegister);
    });
    if (!Known)
      continue;
    if (std::optional<std::string> Failed =
            callAtBindTime(S, C.Callee, C.Args, {}))
      bindError(fmt::format("bind_params: {}: the bound {} fails the "
                            "function's check: {}",
                            S.where(C), S.BoundConsts[C.Args[0].value()],
                            *Failed));
    C.Dead = true;
  }
}

/// No kernel may write a bound value or a constant.
void checkImmutable(const BindState &S) {
  for (const CodeInstr &C : S.Code.Instrs) {
    if (C.Dead || !C.isCall())
      continue;
    const std::optional<KernelEffects> E = S.effectsOf(C);
    if (!E)
      continue;
    for (size_t J = 0; J < C.Args.size(); ++J) {
      if (C.Args[J].kind() != ArgKind::ConstIdx || !writes(E->Args[J]))
        continue;
      auto It = S.BoundConsts.find(C.Args[J].value());
      const std::string What =
          It != S.BoundConsts.end()
              ? "the bound " + It->second
              : fmt::format("constant ${}", C.Args[J].value());
      bindError(fmt::format("bind_params: {}: kernel '{}' writes its "
                            "argument {}, {}, which is immutable",
                            S.where(C), S.calleeName(C), J, What));
    }
  }
}

} // namespace

KernelEffectsLookup
effectsIn(const std::map<std::string, KernelEffects> &Effects) {
  return [&Effects](std::string_view Kernel) -> std::optional<KernelEffects> {
    auto It = Effects.find(std::string(Kernel));
    if (It == Effects.end())
      return std::nullopt;
    return It->second;
  };
}

const Any &BindState::constant(int64_t Index) const {
  const int64_t Base = static_cast<int64_t>(Exe.constants().size());
  return Index < Base ? Exe.constants()[size_t(Index)]
                      : NewConstants[size_t(Index - Base)];
}

int64_t BindState::addConstant(Any V) {
  NewConstants.push_back(std::move(V));
  return static_cast<int64_t>(Exe.constants().size() + NewConstants.size()) - 1;
}

std::optional<KernelEffects> BindState::effectsOf(const CodeInstr &C) const {
  const FunctionInfo &Callee = Table[size_t(C.Callee)];
  if (!Effects || Callee.Kind != FunctionKind::Packed)
    return std::nullopt;
  std::optional<KernelEffects> E = Effects(Callee.Name);
  if (E && E->Args.size() != C.Args.size())
    return std::nullopt;
  return E;
}

std::string BindState::where(const CodeInstr &C) const {
  return fmt::format("function '{}', instruction {} (call '{}')", funcName(),
                     C.Origin, calleeName(C));
}

std::optional<std::string> callAtBindTime(BindState &S, int64_t Callee,
                                          const std::vector<Arg> &Args,
                                          const std::vector<Any> &Outputs) {
  std::vector<AnyView> Views;
  size_t Out = 0;
  for (Arg A : Args) {
    switch (A.kind()) {
    case ArgKind::ConstIdx:
      Views.emplace_back(S.constant(A.value()));
      break;
    case ArgKind::Immediate:
      Views.emplace_back(A.value());
      break;
    case ArgKind::Register:
      if (A.value() == kVoidRegister)
        Views.emplace_back();
      else if (Out < Outputs.size())
        Views.emplace_back(Outputs[Out++]);
      else
        return "an argument is not known at bind time";
      break;
    default:
      return "an argument is not known at bind time";
    }
  }
  FunctionObj *F = S.VM.poolEntry(Callee);
  Any Result;
  if (F->safeCall(Views.data(), static_cast<int32_t>(Views.size()), &Result) !=
      0)
    return takeRaisedError().message();
  return std::nullopt;
}

BindResult bindParams(VirtualMachine &VM, std::string_view Func,
                      std::span<const ParamBinding> Params,
                      const KernelEffectsLookup &Effects) {
  const Executable &Exe = VM.executable();
  const int64_t F = boundFunction(Exe, Func);
  const FunctionInfo &Info = Exe.function(F);
  const std::vector<int64_t> Bound = resolveParams(Info, Params);
  checkNotCalled(Exe, F);

  BindState S{VM,
              Exe,
              F,
              Exe.functions(),
              FunctionCode::decode(Exe, F),
              Info.RegisterFileSize,
              {},
              {},
              Effects,
              {}};
  // New register of each parameter.
  std::vector<RegName> Map(size_t(Info.NumParams));
  FunctionInfo &NewInfo = S.Table[size_t(F)];
  NewInfo.NumParams = Info.NumParams - static_cast<int64_t>(Bound.size());
  NewInfo.ParamNames.clear();
  RegName Next = 0;
  for (int64_t P = 0; P < Info.NumParams; ++P) {
    if (std::find(Bound.begin(), Bound.end(), P) != Bound.end())
      continue;
    Map[size_t(P)] = Next++;
    if (size_t(P) < Info.ParamNames.size())
      NewInfo.ParamNames.push_back(Info.ParamNames[size_t(P)]);
  }
  for (int64_t P : Bound)
    Map[size_t(P)] = Next++;
  renameRegisters(S.Code, Map);
  for (size_t J = 0; J < Bound.size(); ++J) {
    const int64_t C = S.addConstant(Params[J].Value);
    S.BoundConsts[C] = fmt::format("parameter '{}'", paramName(Info, Bound[J]));
    substituteBound(S, Map[size_t(Bound[J])], C);
  }
  runParamChecks(S);
  foldConstantCalls(S);
  checkImmutable(S);
  removeUnusedDefinitions(S);

  BindResult R;
  R.Exe = replaceFunction(Exe, std::move(S.Table), F, S.Code,
                          std::move(S.NewConstants));
  verifyExecutable(*R.Exe);
  R.Folded = std::move(S.Folded);
  return R;
}

} // namespace vmjit::vm
