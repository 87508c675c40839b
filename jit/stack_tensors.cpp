//===- stack_tensors.cpp - Tensors tier 2 keeps on its stack --------------===//
//
// See stack_tensors.h. One pass collects each register's writes and reads,
// the constant checks accept the allocations that cannot fail, a forward
// dataflow finds the value reaching each read, liveness keeps the plan's
// registers off the points where the interpreter's registers are used,
// and a fixpoint drops storages with a view that does not join.
//
//===----------------------------------------------------------------------===//

#include "stack_tensors.h"
#include "forward_dataflow.h"
#include "liveness.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/vm/special_builtins.h"

#include <fmt/format.h>

#include <optional>
#include <span>

namespace vmjit::jit {

using vm::Arg;
using vm::ArgKind;
using vm::InstrView;
using vm::Opcode;

std::string StackTensorPlan::describe() const {
  std::string Out;
  for (const Storage &S : Storages)
    Out += fmt::format("s{}@{}:{};", S.Reg, S.DefPC, S.Bytes);
  for (const Tensor &T : Tensors) {
    Out += fmt::format("t{}@{}:{}+{}:{}.{}.{}[", T.Reg, T.DefPC, T.Storage,
                       T.Offset, T.DType.code, T.DType.bits, T.DType.lanes);
    for (int64_t D : T.Shape)
      Out += fmt::format("{},", D);
    Out += "];";
  }
  return Out;
}

namespace {

/// The dimensions of the Shape constant argument A, if it is one.
std::optional<std::span<const int64_t>> constShape(const vm::Executable &Exe,
                                                   Arg A) {
  if (A.kind() != ArgKind::ConstIdx)
    return std::nullopt;
  const Any &C = Exe.constants()[static_cast<size_t>(A.value())];
  if (C.typeIndex() != ShapeObj::kTypeIndex)
    return std::nullopt;
  return static_cast<const ShapeObj *>(Object::fromRaw(C.raw().v_obj))->dims();
}

/// The DataType constant argument A, if it is one.
std::optional<DLDataType> constDType(const vm::Executable &Exe, Arg A) {
  if (A.kind() != ArgKind::ConstIdx)
    return std::nullopt;
  const VMJITAny &C = Exe.constants()[static_cast<size_t>(A.value())].raw();
  if (C.type_index != kVMJITDataType)
    return std::nullopt;
  return C.v_dtype;
}

/// Whether call I passes no scope, or the constant "global" or "" at 4.
bool globalScope(const vm::Executable &Exe, InstrView I) {
  if (I.callNumArgs() == 4)
    return true;
  const Arg A = I.callArg(4);
  if (A.kind() != ArgKind::ConstIdx)
    return false;
  std::optional<std::string_view> S =
      detail::stringView(Exe.constants()[static_cast<size_t>(A.value())].raw());
  return S && (S->empty() || *S == "global");
}

/// The bytes of the alloc_storage call I, when it cannot fail and fits
/// the limits.
std::optional<int64_t> storageBytes(const vm::Executable &Exe, InstrView I,
                                    const StackTensorLimits &L) {
  const int64_t N = I.callNumArgs();
  if (N != 4 && N != 5)
    return std::nullopt;
  const Arg VM = I.callArg(0), Dev = I.callArg(2);
  std::optional<std::span<const int64_t>> Size = constShape(Exe, I.callArg(1));
  if (VM.kind() != ArgKind::Register || VM.value() != vm::kVMRegister ||
      !Size || Size->size() != 1 || (*Size)[0] < 0 ||
      (*Size)[0] > L.MaxStorageBytes || Dev.kind() != ArgKind::Immediate ||
      Dev.value() < -1 || Dev.value() >= L.HostDevices ||
      !constDType(Exe, I.callArg(3)) || !globalScope(Exe, I))
    return std::nullopt;
  return (*Size)[0];
}

/// The view the alloc_tensor call I makes of a storage of `Capacity`
/// bytes, when it cannot fail: one-lane elements of whole power-of-two
/// bytes, a fitting constant shape, an aligned constant offset.
std::optional<StackTensorPlan::Tensor>
tensorView(const vm::Executable &Exe, InstrView I, int64_t Capacity) {
  const int64_t N = I.callNumArgs();
  if ((N != 4 && N != 5) || !globalScope(Exe, I))
    return std::nullopt;
  const Arg Offset = I.callArg(1);
  std::optional<std::span<const int64_t>> Dims = constShape(Exe, I.callArg(2));
  std::optional<DLDataType> T = constDType(Exe, I.callArg(3));
  if (Offset.kind() != ArgKind::Immediate || Offset.value() < 0 || !Dims ||
      Dims->size() > 8 || !T || T->lanes != 1 || T->bits < 8 ||
      T->bits % 8 != 0 || (T->bits & (T->bits - 1)) != 0)
    return std::nullopt;
  for (int64_t D : *Dims)
    if (D < 0)
      return std::nullopt;
  std::optional<uint64_t> Elems = tensorElementCount(*Dims, *T);
  if (!Elems)
    return std::nullopt;
  const uint64_t Bytes = tensorDataBytes(*Elems, *T);
  const auto Off = static_cast<uint64_t>(Offset.value());
  if (Off % dtypeBytes(*T) != 0 || Off > static_cast<uint64_t>(Capacity) ||
      Bytes > static_cast<uint64_t>(Capacity) - Off)
    return std::nullopt;
  StackTensorPlan::Tensor V;
  V.Offset = Offset.value();
  V.Shape.assign(Dims->begin(), Dims->end());
  V.DType = *T;
  return V;
}

/// An ordinary register argument's number, else -1.
int64_t regOf(Arg A) {
  return A.kind() == ArgKind::Register && !vm::isSpecialRegister(A.value())
             ? A.value()
             : -1;
}

/// What one register is while the plan is made.
struct RegInfo {
  int AllocDefs = 0;
  bool OtherDef = false;
  /// The alloc's pc and what it is (Tensor: its storage's register).
  int64_t DefPC = -1;
  bool IsStorage = false, IsTensor = false;
  int64_t Bytes = 0;
  int64_t StorageReg = -1;
  StackTensorPlan::Tensor View;
  /// A read no plan allows (or not reached by the alloc alone).
  bool BadUse = false;
  bool Joins = false;
};

} // namespace

StackTensorPlan planStackTensors(const vm::Executable &Exe, int64_t Func,
                                 const std::vector<CalleeBinding> &Callees,
                                 const std::vector<int64_t> &LoopHeads,
                                 const std::vector<int64_t> &GuardedCalls,
                                 const StackTensorLimits &Limits) {
  const vm::FunctionInfo &F = Exe.function(Func);
  const int64_t N = F.numInstrs();
  const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
  std::vector<RegInfo> Regs(NumRegs);
  auto Inline = [&](InstrView I) {
    return Callees[static_cast<size_t>(I.callFunc())].Inline;
  };
  // Writes.
  for (int64_t PC = 0; PC < N; ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() != Opcode::Call || vm::isSpecialRegister(I.callDst()))
      continue;
    RegInfo &R = Regs[static_cast<size_t>(I.callDst())];
    const SpecialBuiltin W = Inline(I);
    if (W == SpecialBuiltin::NullValue && I.callNumArgs() == 0)
      continue;
    if (W == SpecialBuiltin::AllocStorage) {
      if (std::optional<int64_t> Bytes = storageBytes(Exe, I, Limits)) {
        ++R.AllocDefs;
        R.DefPC = PC;
        R.IsStorage = true;
        R.Bytes = *Bytes;
        continue;
      }
    } else if (W == SpecialBuiltin::AllocTensor && I.callNumArgs() >= 1 &&
               regOf(I.callArg(0)) >= 0) {
      ++R.AllocDefs;
      R.DefPC = PC;
      R.IsTensor = true;
      R.StorageReg = regOf(I.callArg(0));
      continue;
    }
    R.OtherDef = true;
  }
  for (size_t K = 0; K < NumRegs; ++K) {
    RegInfo &R = Regs[K];
    R.Joins = static_cast<int64_t>(K) >= F.NumParams && R.AllocDefs == 1 &&
              !R.OtherDef && R.IsStorage != R.IsTensor;
  }
  // The views, now that the storages' sizes are known.
  for (RegInfo &R : Regs) {
    if (!R.Joins || !R.IsTensor)
      continue;
    const RegInfo &S = Regs[static_cast<size_t>(R.StorageReg)];
    std::optional<StackTensorPlan::Tensor> V =
        S.Joins && S.IsStorage
            ? tensorView(Exe, Exe.instr(F.StartInstr + R.DefPC), S.Bytes)
            : std::nullopt;
    if (V)
      R.View = std::move(*V);
    else
      R.Joins = false;
  }
  // The value reaching each read: the alloc's pc, -1 (another value, None
  // on entry) or -2 (both ways).
  std::vector<int64_t> Entry(NumRegs, -1);
  auto Join = [](std::vector<int64_t> &S, const std::vector<int64_t> &In,
                 bool First) {
    return joinAgreeing<int64_t>(S, In, First, -2);
  };
  auto Transfer = [&](int64_t PC, InstrView I, std::vector<int64_t> &Out) {
    if (I.opcode() == Opcode::Call && !vm::isSpecialRegister(I.callDst())) {
      const size_t D = static_cast<size_t>(I.callDst());
      Out[D] = Regs[D].DefPC == PC && Regs[D].AllocDefs == 1 ? PC : -1;
    }
  };
  const std::vector<std::vector<int64_t>> Reach =
      forwardDataflow<int64_t>(Exe, Func, -3, Entry, {}, -1, Join, Transfer);
  // Reads.
  auto Read = [&](int64_t PC, int64_t Reg, bool Allowed) {
    if (Reg < 0)
      return;
    RegInfo &R = Regs[static_cast<size_t>(Reg)];
    const int64_t Reached =
        Reach[static_cast<size_t>(PC)][static_cast<size_t>(Reg)];
    if (!Allowed || (Reached != -3 && Reached != R.DefPC))
      R.BadUse = true;
  };
  for (int64_t PC = 0; PC < N; ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() == Opcode::If) {
      Read(PC, regOf(Arg::reg(I.ifCond())), false);
    } else if (I.opcode() == Opcode::Ret) {
      Read(PC, regOf(Arg::reg(I.retReg())), false);
    } else if (I.opcode() == Opcode::Call) {
      const CalleeBinding &CB = Callees[static_cast<size_t>(I.callFunc())];
      const bool MakesView =
          CB.Inline == SpecialBuiltin::AllocTensor &&
          !vm::isSpecialRegister(I.callDst()) &&
          Regs[static_cast<size_t>(I.callDst())].DefPC == PC &&
          Regs[static_cast<size_t>(I.callDst())].AllocDefs == 1;
      for (int64_t K = 0; K < I.callNumArgs(); ++K) {
        const int64_t R = regOf(I.callArg(K));
        if (R < 0)
          continue;
        const RegInfo &Info = Regs[static_cast<size_t>(R)];
        const bool Allowed =
            Info.IsTensor ? K < 64 && ((CB.StackTensorArgs >> K) & 1) != 0
                          : MakesView && K == 0;
        Read(PC, R, Allowed);
      }
    }
  }
  // Not live where the interpreter's registers are read or written.
  const LiveTable Live = liveAfter(Exe, Func);
  auto Drop = [&](const std::vector<bool> &LiveRegs) {
    for (size_t R = 0; R < NumRegs; ++R)
      if (LiveRegs[R])
        Regs[R].BadUse = true;
  };
  for (int64_t H : LoopHeads) {
    // Live into H: read at H, or live after it and not written there.
    std::vector<bool> In = Live[static_cast<size_t>(H)];
    InstrView I = Exe.instr(F.StartInstr + H);
    if (I.opcode() == Opcode::Call) {
      if (!vm::isSpecialRegister(I.callDst()))
        In[static_cast<size_t>(I.callDst())] = false;
      for (int64_t K = 0; K < I.callNumArgs(); ++K)
        if (const int64_t R = regOf(I.callArg(K)); R >= 0)
          In[static_cast<size_t>(R)] = true;
    } else if (I.opcode() == Opcode::If) {
      if (const int64_t R = regOf(Arg::reg(I.ifCond())); R >= 0)
        In[static_cast<size_t>(R)] = true;
    } else if (I.opcode() == Opcode::Ret) {
      if (const int64_t R = regOf(Arg::reg(I.retReg())); R >= 0)
        In[static_cast<size_t>(R)] = true;
    }
    Drop(In);
  }
  for (int64_t PC : GuardedCalls)
    Drop(Live[static_cast<size_t>(PC)]);
  for (RegInfo &R : Regs)
    R.Joins = R.Joins && !R.BadUse;
  // A storage joins with all its views or not at all.
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (RegInfo &R : Regs) {
      if (!R.Joins)
        continue;
      if (R.IsTensor && !Regs[static_cast<size_t>(R.StorageReg)].Joins) {
        R.Joins = false;
        Changed = true;
      }
    }
    for (size_t K = 0; K < NumRegs; ++K) {
      RegInfo &R = Regs[K];
      if (!R.IsTensor || R.Joins || R.StorageReg < 0)
        continue;
      RegInfo &S = Regs[static_cast<size_t>(R.StorageReg)];
      if (S.Joins && S.IsStorage && R.AllocDefs >= 1) {
        S.Joins = false;
        Changed = true;
      }
    }
  }
  // Storages in order, within the frame's limit; then their views (a view
  // of a storage over the limit stays an allocation, as its storage).
  StackTensorPlan Plan;
  Plan.TensorOfReg.assign(NumRegs, -1);
  Plan.StorageOfReg.assign(NumRegs, -1);
  int64_t FrameBytes = 0;
  for (size_t K = 0; K < NumRegs; ++K) {
    const RegInfo &R = Regs[K];
    if (!R.Joins || !R.IsStorage)
      continue;
    const int64_t Rounded = (std::max<int64_t>(R.Bytes, 1) + 63) / 64 * 64;
    if (FrameBytes + Rounded > Limits.MaxFrameBytes)
      continue;
    FrameBytes += Rounded;
    Plan.StorageOfReg[K] = static_cast<int64_t>(Plan.Storages.size());
    Plan.Storages.push_back({static_cast<int64_t>(K), R.DefPC, R.Bytes});
  }
  for (size_t K = 0; K < NumRegs; ++K) {
    const RegInfo &R = Regs[K];
    if (!R.Joins || !R.IsTensor)
      continue;
    const int64_t S = Plan.StorageOfReg[static_cast<size_t>(R.StorageReg)];
    if (S < 0)
      continue;
    StackTensorPlan::Tensor T = R.View;
    T.Reg = static_cast<int64_t>(K);
    T.DefPC = R.DefPC;
    T.Storage = static_cast<size_t>(S);
    Plan.TensorOfReg[K] = static_cast<int64_t>(Plan.Tensors.size());
    Plan.Tensors.push_back(std::move(T));
  }
  return Plan;
}

std::vector<int64_t> loopHeads(const vm::Executable &Exe, int64_t Func) {
  const vm::FunctionInfo &F = Exe.function(Func);
  std::vector<int64_t> Heads;
  for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
    InstrView I = Exe.instr(F.StartInstr + PC);
    if (I.opcode() == Opcode::Goto && I.gotoOffset() <= 0)
      Heads.push_back(PC + I.gotoOffset());
    else if (I.opcode() == Opcode::If && I.ifFalseOffset() <= 0)
      Heads.push_back(PC + I.ifFalseOffset());
  }
  return Heads;
}

bool keepsTensorsOnStack(const vm::Executable &Exe, int64_t Func,
                         const std::vector<CalleeBinding> &Callees,
                         int64_t HostDevices) {
  StackTensorLimits Limits;
  Limits.HostDevices = HostDevices;
  return !planStackTensors(Exe, Func, Callees, loopHeads(Exe, Func), {}, Limits)
              .Tensors.empty();
}

} // namespace vmjit::jit
