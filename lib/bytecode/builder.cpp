//===- builder.cpp - Building executables from C++ -------------------------===//

#include "vmjit/bytecode/builder.h"
#include "vmjit/bytecode/verifier.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"

#include <cstring>
#include <fmt/format.h>

namespace vmjit::vm {

//===----------------------------------------------------------------------===//
// FunctionBuilder
//===----------------------------------------------------------------------===//

Label FunctionBuilder::newLabel() {
  LabelTargets.push_back(-1);
  return Label{static_cast<int64_t>(LabelTargets.size()) - 1};
}

void FunctionBuilder::bind(Label L) {
  if (L.Id < 0 || L.Id >= static_cast<int64_t>(LabelTargets.size()))
    throwError("ValueError", "bind: label does not belong to this function");
  if (LabelTargets[L.Id] != -1)
    throwError("ValueError", fmt::format("label {} is bound twice", L.Id));
  LabelTargets[L.Id] = numInstrs();
}

void FunctionBuilder::useRegister(RegName R) {
  if (isSpecialRegister(R))
    return;
  if (R < 0)
    throwError("ValueError", fmt::format("negative register %{}", R));
  RegisterFileSize = std::max(RegisterFileSize, R + 1);
}

void FunctionBuilder::reserveRegisters(int64_t Size) {
  RegisterFileSize = std::max(RegisterFileSize, Size);
}

void FunctionBuilder::emitCall(RegName Dst, int64_t Func,
                               std::vector<Arg> Args) {
  useRegister(Dst);
  std::vector<Word> W = {static_cast<Word>(Opcode::Call), Dst, Func,
                         static_cast<Word>(Args.size())};
  for (Arg A : Args) {
    if (A.kind() == ArgKind::Register)
      useRegister(A.value());
    W.push_back(A.word());
  }
  Instrs.push_back(std::move(W));
}

void FunctionBuilder::emitRet(RegName Reg) {
  useRegister(Reg);
  Instrs.push_back({static_cast<Word>(Opcode::Ret), Reg});
}

void FunctionBuilder::emitGoto(Label Target) {
  Pending.push_back({Instrs.size(), 1, Target.Id});
  Instrs.push_back({static_cast<Word>(Opcode::Goto), 0});
}

void FunctionBuilder::emitIf(RegName Cond, Label Else) {
  useRegister(Cond);
  Pending.push_back({Instrs.size(), 2, Else.Id});
  Instrs.push_back({static_cast<Word>(Opcode::If), Cond, 0});
}

void FunctionBuilder::emitGotoOffset(int64_t Offset) {
  Instrs.push_back({static_cast<Word>(Opcode::Goto), Offset});
}

void FunctionBuilder::emitIfOffset(RegName Cond, int64_t FalseOffset) {
  useRegister(Cond);
  Instrs.push_back({static_cast<Word>(Opcode::If), Cond, FalseOffset});
}

//===----------------------------------------------------------------------===//
// ExecutableBuilder
//===----------------------------------------------------------------------===//

ExecutableBuilder::ExecutableBuilder() = default;
ExecutableBuilder::~ExecutableBuilder() = default;

std::optional<int64_t> ExecutableBuilder::lookup(const std::string &Name) const {
  auto It = Index.find(Name);
  if (It == Index.end())
    return std::nullopt;
  return It->second;
}

int64_t ExecutableBuilder::declare(const std::string &Name, FunctionKind Kind,
                                   const std::vector<std::string> *Params) {
  if (Name.empty())
    throwError("ValueError", "a function needs a name");
  if (auto I = lookup(Name)) {
    FunctionInfo &F = Functions[*I];
    if (F.Kind != Kind)
      throwError("ValueError",
                 fmt::format("function '{}' is declared as {} and as {}", Name,
                             functionKindName(F.Kind),
                             functionKindName(Kind)));
    if (Params && F.ParamNames != *Params)
      throwError("ValueError",
                 fmt::format("function '{}' is declared with two different "
                             "parameter lists",
                             Name));
    return *I;
  }
  FunctionInfo F;
  F.Kind = Kind;
  F.Name = Name;
  if (Params) {
    F.ParamNames = *Params;
    F.NumParams = static_cast<int64_t>(Params->size());
    F.RegisterFileSize = F.NumParams;
  }
  int64_t I = static_cast<int64_t>(Functions.size());
  Functions.push_back(std::move(F));
  Bodies.emplace_back();
  InstrCounts.push_back(0);
  Defined.push_back(Kind != FunctionKind::Bytecode);
  Index.emplace(Name, I);
  return I;
}

int64_t ExecutableBuilder::declarePacked(const std::string &Name) {
  return declare(Name, FunctionKind::Packed, nullptr);
}

int64_t ExecutableBuilder::declareNative(const std::string &Name) {
  return declare(Name, FunctionKind::Native, nullptr);
}

int64_t ExecutableBuilder::declareNative(const std::string &Name,
                                         const std::vector<std::string> &Params,
                                         int64_t RegisterFileSize) {
  if (RegisterFileSize < static_cast<int64_t>(Params.size()))
    throwError("ValueError",
               fmt::format("native function '{}': a register file of {} "
                           "registers cannot hold its {} parameters",
                           Name, RegisterFileSize, Params.size()));
  bool Existed = lookup(Name).has_value();
  int64_t I = declare(Name, FunctionKind::Native, &Params);
  if (Existed && Functions[I].RegisterFileSize != RegisterFileSize)
    throwError("ValueError",
               fmt::format("native function '{}' is declared with {} and "
                           "with {} registers",
                           Name, Functions[I].RegisterFileSize,
                           RegisterFileSize));
  Functions[I].RegisterFileSize = RegisterFileSize;
  return I;
}

int64_t
ExecutableBuilder::declareFunction(const std::string &Name,
                                   const std::vector<std::string> &Params) {
  return declare(Name, FunctionKind::Bytecode, &Params);
}

FunctionBuilder &
ExecutableBuilder::beginFunction(const std::string &Name,
                                 const std::vector<std::string> &Params) {
  if (Current)
    throwError("ValueError",
               fmt::format("beginFunction('{}') inside function '{}'", Name,
                           Functions[CurrentIndex].Name));
  int64_t I = declareFunction(Name, Params);
  if (Defined[I])
    throwError("ValueError",
               fmt::format("function '{}' is defined twice", Name));
  CurrentIndex = I;
  Current.reset(new FunctionBuilder(static_cast<int64_t>(Params.size())));
  return *Current;
}

void ExecutableBuilder::endFunction() {
  if (!Current)
    throwError("ValueError", "endFunction() without beginFunction()");
  FunctionBuilder &FB = *Current;
  const std::string &Name = Functions[CurrentIndex].Name;
  for (const auto &P : FB.Pending) {
    if (P.LabelId < 0 ||
        P.LabelId >= static_cast<int64_t>(FB.LabelTargets.size()))
      throwError("ValueError",
                 fmt::format("function '{}': jump to an unknown label", Name));
    int64_t Target = FB.LabelTargets[P.LabelId];
    if (Target < 0)
      throwError("ValueError",
                 fmt::format("function '{}': label {} is used but never bound",
                             Name, P.LabelId));
    FB.Instrs[P.Instr][P.WordSlot] = Target - static_cast<int64_t>(P.Instr);
  }
  std::vector<Word> &Body = Bodies[CurrentIndex];
  for (auto &I : FB.Instrs)
    Body.insert(Body.end(), I.begin(), I.end());
  Functions[CurrentIndex].RegisterFileSize = FB.RegisterFileSize;
  InstrCounts[CurrentIndex] = FB.numInstrs();
  Defined[CurrentIndex] = true;
  Current.reset();
  CurrentIndex = -1;
}

namespace {
/// A key identifying constants that may share a pool slot, or "" for
/// values that never do (only the very same tensor object is shared).
std::string constantKey(const Any &V) {
  const VMJITAny &R = V.raw();
  switch (V.typeIndex()) {
  case kVMJITNone:
    return "n";
  case kVMJITInt:
    return fmt::format("i{}", R.v_int64);
  case kVMJITBool:
    return fmt::format("b{}", R.v_int64);
  case kVMJITFloat: {
    uint64_t Bits;
    std::memcpy(&Bits, &R.v_float64, 8);
    return fmt::format("f{}", Bits);
  }
  case kVMJITDataType:
    return fmt::format("d{}.{}.{}", R.v_dtype.code, R.v_dtype.bits,
                       R.v_dtype.lanes);
  case kVMJITSmallStr:
  case kVMJITStr:
    return "s" + *V.as<std::string>();
  case kVMJITShape:
    return "h" + shapeString(V.as<Shape>()->dims());
  default:
    if (V.typeIndex() >= kVMJITStaticObjectBegin)
      return fmt::format("o{}", static_cast<const void *>(R.v_obj));
    return "";
  }
}
} // namespace

int64_t ExecutableBuilder::addConstant(Any Value, bool Dedupe) {
  std::string Key = Dedupe ? constantKey(Value) : std::string();
  if (!Key.empty()) {
    auto It = ConstantKeys.find(Key);
    if (It != ConstantKeys.end())
      return It->second;
  }
  int64_t I = static_cast<int64_t>(Constants.size());
  Constants.push_back(std::move(Value));
  if (!Key.empty())
    ConstantKeys.emplace(std::move(Key), I);
  return I;
}

std::shared_ptr<Executable>
ExecutableBuilder::finish(const VerifierLimits &Limits) {
  if (Current)
    throwError("ValueError",
               fmt::format("finish() while function '{}' is still open",
                           Functions[CurrentIndex].Name));
  std::vector<FunctionInfo> Fns = Functions;
  std::vector<Word> Code;
  int64_t NextInstr = 0;
  for (size_t I = 0; I < Fns.size(); ++I) {
    FunctionInfo &F = Fns[I];
    if (!Defined[I])
      throwError("ValueError",
                 fmt::format("function '{}' is declared but has no body",
                             F.Name));
    if (F.Kind != FunctionKind::Bytecode)
      continue;
    F.StartInstr = NextInstr;
    F.EndInstr = NextInstr + InstrCounts[I];
    NextInstr = F.EndInstr;
    Code.insert(Code.end(), Bodies[I].begin(), Bodies[I].end());
  }
  auto Exe = Executable::create(std::move(Fns), Constants, std::move(Code));
  verifyExecutable(*Exe, Limits);
  return Exe;
}

} // namespace vmjit::vm
