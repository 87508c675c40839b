//===- kind_inference.cpp - The kinds of value each register holds --------===//

#include "kind_inference.h"
#include "forward_dataflow.h"
#include "vmjit/vm/native_code.h"

#include <bit>

namespace vmjit::jit {

namespace kind = vm::kind;
namespace scalar = kernels::scalar;
using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

bool guardableKind(uint8_t K) {
  return std::popcount(K) == 1 && kind::typeIndexOf(K) >= 0;
}

bool scalarKinds(uint8_t K) {
  return K != 0 &&
         (K & ~(kind::None | kind::Int | kind::Bool | kind::Float)) == 0;
}

uint8_t argKinds(const vm::Executable &Exe, const std::vector<uint8_t> &In,
                 vm::Arg A) {
  switch (A.kind()) {
  case vm::ArgKind::Register:
    if (A.value() == vm::kVoidRegister)
      return kind::None;
    if (A.value() == vm::kVMRegister)
      return kind::Other;
    return In[static_cast<size_t>(A.value())];
  case vm::ArgKind::Immediate:
    return kind::Int;
  case vm::ArgKind::ConstIdx:
    return kind::of(
        Exe.constants()[static_cast<size_t>(A.value())].typeIndex());
  case vm::ArgKind::FuncIdx:
    return kind::Object;
  }
  return kind::Any;
}

namespace {

constexpr uint8_t kIntLike = kind::Int | kind::Bool;
constexpr uint8_t kNumeric = kIntLike | kind::Float;

class Inference {
public:
  Inference(const vm::Executable &Exe, int64_t Func,
            const std::vector<CalleeBinding> &Callees, bool InlineBuiltins,
            const FunctionSpeculation &Spec)
      : Exe(Exe), Func(Func), F(Exe.function(Func)), Callees(Callees),
        InlineBuiltins(InlineBuiltins), Spec(Spec) {}

  KindTable run();

private:
  /// The kinds a call's result may have, given the registers before it.
  uint8_t resultKinds(int64_t PC, InstrView I,
                      const std::vector<uint8_t> &In) const;

  const vm::Executable &Exe;
  const int64_t Func;
  const vm::FunctionInfo &F;
  const std::vector<CalleeBinding> &Callees;
  bool InlineBuiltins;
  const FunctionSpeculation &Spec;
};

/// The kinds of a standard scalar.* function's result from its operands'
/// (the only ones bound inline): a bool from a comparison or `not`, else
/// an int from ints and bools and a float when an operand is a float;
/// anything else raises.
template <typename ArgKinds>
uint8_t scalarResultKinds(scalar::Op Op, int64_t N, ArgKinds Arg) {
  if (scalar::returnsBool(Op))
    return kind::Bool;
  uint8_t All = 0;
  bool AllIntLike = true, AllNumeric = true;
  for (int64_t K = 0; K < N; ++K) {
    All |= Arg(K);
    AllIntLike = AllIntLike && (Arg(K) & kIntLike);
    AllNumeric = AllNumeric && (Arg(K) & kNumeric);
  }
  uint8_t Out = AllIntLike ? kind::Int : 0;
  if ((All & kind::Float) && AllNumeric)
    Out |= kind::Float;
  return Out;
}

uint8_t Inference::resultKinds(int64_t PC, InstrView I,
                               const std::vector<uint8_t> &In) const {
  const CalleeBinding &Bind = Callees[static_cast<size_t>(I.callFunc())];
  const int64_t N = I.callNumArgs();
  auto Arg = [&](int64_t K) { return argKinds(Exe, In, I.callArg(K)); };
  const SpecialBuiltin W = inlinedBuiltin(Bind, InlineBuiltins);
  if (W != SpecialBuiltin::None) {
    // What the row says of the inline form's result (the call it falls
    // back to returns the same or raises); anything else for the rest.
    if (!vm::inlineFormApplies(W, I))
      return kind::Any;
    switch (vm::specialBuiltin(W).Result) {
    case vm::ResultFact::NoneValue:
      return kind::None;
    case vm::ResultFact::FirstArg:
      return Arg(0);
    case vm::ResultFact::Truth:
      return (Arg(0) & ~kIntLike) ? kind::Any : kind::Bool;
    case vm::ResultFact::ScalarArithmetic:
      return scalarResultKinds(*scalarOpOf(W), N, Arg);
    default:
      return kind::Any;
    }
  }
  // A call tier 2 makes: what the speculation assumes, or anything.
  const uint8_t S =
      Spec.Results.empty() ? 0 : Spec.Results[static_cast<size_t>(PC)];
  return guardableKind(S) ? S : kind::Any;
}

KindTable Inference::run() {
  const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
  std::vector<uint8_t> Entry(NumRegs, kind::None);
  for (int64_t K = 0; K < F.NumParams && K < F.RegisterFileSize; ++K) {
    const uint8_t S =
        K < static_cast<int64_t>(Spec.Params.size()) ? Spec.Params[K] : 0;
    Entry[static_cast<size_t>(K)] = guardableKind(S) ? S : kind::Any;
  }
  // Kinds merge by union; a state's first arrival is taken as it is.
  auto Join = [](std::vector<uint8_t> &S, const std::vector<uint8_t> &In,
                 bool First) {
    bool Grew = First;
    for (size_t R = 0; R < S.size(); ++R) {
      const uint8_t Merged = S[R] | In[R];
      Grew = Grew || Merged != S[R];
      S[R] = Merged;
    }
    return Grew;
  };
  auto Transfer = [&](int64_t PC, InstrView I, std::vector<uint8_t> &Out) {
    if (I.opcode() == Opcode::Call && I.callDst() != vm::kVoidRegister)
      Out[static_cast<size_t>(I.callDst())] = resultKinds(PC, I, Out);
  };
  // A loop header whose entry guards nothing admits anything.
  return forwardDataflow<uint8_t>(Exe, Func, 0, Entry, Spec.GenericEntries,
                                  kind::Any, Join, Transfer);
}

} // namespace

bool intByUse(const vm::Executable &Exe, int64_t Func,
              const std::vector<CalleeBinding> &Callees, bool InlineBuiltins,
              int64_t R, int64_t DefPC) {
  const vm::FunctionInfo &F = Exe.function(Func);
  bool ScalarUse = false;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    switch (I.opcode()) {
    case Opcode::Call: {
      if (I.callDst() == R && PC != DefPC)
        return false;
      const SpecialBuiltin W = inlinedBuiltin(
          Callees[static_cast<size_t>(I.callFunc())], InlineBuiltins);
      const bool Scalar = scalarOpOf(W) && vm::inlineFormApplies(W, I);
      for (int64_t K = 0; K < I.callNumArgs(); ++K) {
        Arg A = I.callArg(K);
        if (A.kind() != ArgKind::Register || A.value() != R)
          continue;
        if (!Scalar)
          return false;
        ScalarUse = true;
      }
      break;
    }
    case Opcode::Ret:
    case Opcode::Goto:
    case Opcode::If:
      break;
    }
  }
  return ScalarUse;
}

KindTable inferKinds(const vm::Executable &Exe, int64_t Func,
                     const std::vector<CalleeBinding> &Callees,
                     bool InlineBuiltins, const FunctionSpeculation &Spec) {
  return Inference(Exe, Func, Callees, InlineBuiltins, Spec).run();
}

} // namespace vmjit::jit
