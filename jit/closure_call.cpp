//===- closure_call.cpp - Direct calls of a function's own closures -------===//

#include "closure_call.h"

#include "vmjit/bytecode/executable.h"

namespace vmjit::jit {

using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

namespace {

/// The make_closure(@G, captured...) that is the only definition of
/// register R in function Func.
std::optional<ClosureCall> madeClosure(const vm::Executable &Exe, int64_t Func,
                                       int64_t R) {
  const vm::FunctionInfo &F = Exe.function(Func);
  if (R < F.NumParams)
    return std::nullopt;
  std::optional<ClosureCall> Made;
  int Defs = 0;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() != Opcode::Call || I.callDst() != R)
      continue;
    if (++Defs > 1)
      return std::nullopt;
    const vm::FunctionInfo &Callee = Exe.function(I.callFunc());
    if (Callee.Name != "vm.builtin.make_closure" || I.callNumArgs() < 1 ||
        I.callArg(0).kind() != ArgKind::FuncIdx)
      continue;
    const int64_t G = I.callArg(0).value();
    if (Exe.function(G).Kind == vm::FunctionKind::Bytecode)
      Made = ClosureCall{G, I.callNumArgs() - 1};
  }
  return Defs == 1 ? Made : std::nullopt;
}

} // namespace

std::optional<ClosureCall>
closureCallAt(const vm::Executable &Exe, int64_t Func,
              const std::vector<CalleeBinding> &Callees, InstrView I) {
  if (I.opcode() != Opcode::Call || I.callNumArgs() < 2 ||
      !Callees[static_cast<size_t>(I.callFunc())].Standard ||
      Exe.function(I.callFunc()).Name != "vm.builtin.invoke_closure")
    return std::nullopt;
  // The VM argument as invoke_closure checks it, and the closure in a
  // register.
  const Arg VM = I.callArg(0), Fn = I.callArg(1);
  if (VM.kind() != ArgKind::Register || VM.value() != vm::kVMRegister ||
      Fn.kind() != ArgKind::Register || vm::isSpecialRegister(Fn.value()))
    return std::nullopt;
  return madeClosure(Exe, Func, Fn.value());
}

} // namespace vmjit::jit
