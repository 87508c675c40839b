//===- verifier.cpp - Checking executables before they run -----------------===//

#include "vmjit/bytecode/verifier.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/tensor.h"

#include <algorithm>
#include <fmt/format.h>
#include <vector>

namespace vmjit::vm {
namespace {

/// A fixed-size bitset over registers.
class RegSet {
public:
  RegSet() = default;
  RegSet(size_t NumRegs, bool All)
      : Words((NumRegs + 63) / 64, All ? ~uint64_t(0) : 0) {}
  bool test(int64_t R) const { return Words[R / 64] >> (R % 64) & 1; }
  void set(int64_t R) { Words[R / 64] |= uint64_t(1) << (R % 64); }
  /// this &= O; returns whether anything changed.
  bool intersect(const RegSet &O) {
    bool Changed = false;
    for (size_t I = 0; I < Words.size(); ++I) {
      uint64_t N = Words[I] & O.Words[I];
      Changed |= N != Words[I];
      Words[I] = N;
    }
    return Changed;
  }

private:
  std::vector<uint64_t> Words;
};

class FunctionVerifier {
public:
  FunctionVerifier(const Executable &Exe, int64_t FuncIndex,
                   const VerifierLimits &Limits)
      : Exe(Exe), F(Exe.function(FuncIndex)), FuncIndex(FuncIndex),
        Limits(Limits) {}

  void run() {
    checkHeader();
    for (int64_t I = 0; I < F.numInstrs(); ++I)
      checkInstr(I);
    InstrView Last = instr(F.numInstrs() - 1);
    if (Last.opcode() != Opcode::Ret && Last.opcode() != Opcode::Goto)
      fail(F.numInstrs() - 1, "the last instruction of a function must be "
                              "'ret' or 'goto', not '{}'",
           opcodeName(Last.opcode()));
    checkDefiniteAssignment();
  }

private:
  InstrView instr(int64_t Local) const {
    return Exe.instr(F.StartInstr + Local);
  }

  /// Where: "function 'F', instruction N (call 'G')".
  std::string where(int64_t Local) const {
    std::string S = fmt::format("function '{}', instruction {}", F.Name, Local);
    if (Local < 0 || Local >= F.numInstrs())
      return fmt::format("function '{}'", F.Name);
    InstrView I = instr(Local);
    if (I.opcode() == Opcode::Call && I.callFunc() >= 0 &&
        I.callFunc() < static_cast<int64_t>(Exe.functions().size()))
      S += fmt::format(" (call '{}')", Exe.function(I.callFunc()).Name);
    return S;
  }

  template <typename... A>
  [[noreturn]] void fail(int64_t Local, fmt::format_string<A...> Fmt,
                         A &&...Args) const {
    failAt({FuncIndex, Local, -1}, Fmt, std::forward<A>(Args)...);
  }

  template <typename... A>
  [[noreturn]] void failAt(VerifyLocation L, fmt::format_string<A...> Fmt,
                           A &&...Args) const {
    // Header errors (Instr -1) come before the range is known to be sane:
    // numInstrs() of a forged range may overflow.
    if (L.Instr >= 0 && L.Instr >= F.numInstrs())
      L.Instr = -1;
    throw VerifyFailure(where(L.Instr) + ": " +
                            fmt::format(Fmt, std::forward<A>(Args)...),
                        L);
  }

  void checkHeader() {
    int64_t NumInstrs = Exe.numInstrs();
    if (F.StartInstr < 0 || F.EndInstr > NumInstrs ||
        F.StartInstr >= F.EndInstr)
      fail(-1, "instruction range [{}, {}) is empty or outside the {} "
               "instructions of the executable",
           F.StartInstr, F.EndInstr, NumInstrs);
    if (F.NumParams < 0 ||
        static_cast<size_t>(F.NumParams) != F.ParamNames.size())
      fail(-1, "{} parameters but {} parameter names", F.NumParams,
           F.ParamNames.size());
    if (F.RegisterFileSize < F.NumParams)
      fail(-1, "register file of {} registers cannot hold its {} parameters",
           F.RegisterFileSize, F.NumParams);
    if (F.RegisterFileSize > Limits.MaxRegisters)
      fail(-1, "register file of {} registers is over the limit of {}",
           F.RegisterFileSize, Limits.MaxRegisters);
  }

  bool validReg(RegName R) const { return R >= 0 && R < F.RegisterFileSize; }

  /// A register an instruction reads: one of the file, %vm, or %void
  /// (which reads as None, as in TVM's VM: its compiler passes
  /// R.null_value() that way).
  void checkReadReg(int64_t Local, RegName R, std::string_view What) const {
    if (isSpecialRegister(R) || validReg(R))
      return;
    fail(Local, "{} reads register %{}, but the register file has {} registers",
         What, R, F.RegisterFileSize);
  }

  void checkJump(int64_t Local, int64_t Offset) const {
    // The offset is any word of the file: add without overflowing.
    int64_t Target;
    if (__builtin_add_overflow(Local, Offset, &Target))
      fail(Local, "jump by {} lands outside the function's {} instructions",
           Offset, F.numInstrs());
    if (Offset < -F.numInstrs() || Offset > F.numInstrs() || Target < 0 ||
        Target >= F.numInstrs())
      fail(Local, "jump by {} lands on instruction {}, outside the function's "
                  "{} instructions",
           Offset, Target, F.numInstrs());
  }

  /// The register a ret returns or an if tests (`Verb`): void or one of the
  /// register file, never the vm register.
  void checkRetOrIfReg(int64_t Local, RegName R, std::string_view Verb) const {
    if (R == kVMRegister)
      fail(Local, "{} the vm register", Verb);
    if (R != kVoidRegister && !validReg(R))
      fail(Local, "{} register %{}, but the register file has {} registers",
           Verb, R, F.RegisterFileSize);
  }

  void checkInstr(int64_t Local) const {
    InstrView I = instr(Local);
    const int64_t NumFuncs = static_cast<int64_t>(Exe.functions().size());
    const int64_t NumConsts = static_cast<int64_t>(Exe.constants().size());
    switch (I.opcode()) {
    case Opcode::Call: {
      if (I.callFunc() < 0 || I.callFunc() >= NumFuncs)
        fail(Local, "calls function index {}, but there are {} functions",
             I.callFunc(), NumFuncs);
      RegName Dst = I.callDst();
      if (Dst == kVMRegister)
        fail(Local, "writes its result to the vm register");
      if (Dst != kVoidRegister && !validReg(Dst))
        fail(Local, "writes register %{}, but the register file has {} "
                    "registers",
             Dst, F.RegisterFileSize);
      const FunctionInfo &Callee = Exe.function(I.callFunc());
      if (Callee.Kind == FunctionKind::Bytecode &&
          I.callNumArgs() != Callee.NumParams)
        fail(Local, "passes {} arguments to '{}', which takes {}",
             I.callNumArgs(), Callee.Name, Callee.NumParams);
      for (int64_t A = 0; A < I.callNumArgs(); ++A) {
        Arg X = I.callArg(A);
        std::string What = fmt::format("argument {}", A + 1);
        switch (X.kindByte()) {
        case static_cast<uint8_t>(ArgKind::Register):
          checkReadReg(Local, X.value(), What);
          break;
        case static_cast<uint8_t>(ArgKind::Immediate):
          break;
        case static_cast<uint8_t>(ArgKind::ConstIdx):
          if (X.value() < 0 || X.value() >= NumConsts)
            fail(Local, "{} refers to constant {}, but there are {} "
                        "constants",
                 What, X.value(), NumConsts);
          break;
        case static_cast<uint8_t>(ArgKind::FuncIdx):
          if (X.value() < 0 || X.value() >= NumFuncs)
            fail(Local, "{} refers to function {}, but there are {} "
                        "functions",
                 What, X.value(), NumFuncs);
          break;
        default:
          fail(Local, "{} has unknown kind {}", What, X.kindByte());
        }
      }
      return;
    }
    case Opcode::Ret:
      checkRetOrIfReg(Local, I.retReg(), "returns");
      return;
    case Opcode::Goto:
      checkJump(Local, I.gotoOffset());
      return;
    case Opcode::If:
      checkRetOrIfReg(Local, I.ifCond(), "tests");
      checkJump(Local, I.ifFalseOffset());
      return;
    }
    fail(Local, "unknown opcode {}", static_cast<int64_t>(I.opcode()));
  }

  /// The function's basic blocks: block B is instructions
  /// [Start[B], Start[B + 1]); BlockOf maps an instruction to its block.
  struct BasicBlocks {
    std::vector<int64_t> Start, BlockOf;
    size_t size() const { return Start.size() - 1; }
  };

  /// Registers written on every path into each block, and whether any path
  /// reaches it.
  struct AssignedRegs {
    std::vector<RegSet> In;
    std::vector<char> Reached;
  };

  /// Definite assignment over basic blocks: IN(entry) = parameters,
  /// IN(b) = intersection of OUT(preds), OUT = IN + registers written.
  void checkDefiniteAssignment() {
    const BasicBlocks Blocks = splitBlocks();
    const size_t NumRegs = static_cast<size_t>(F.RegisterFileSize);
    if (static_cast<double>(Blocks.size()) * ((NumRegs + 63) / 64) * 8 >
        static_cast<double>(Limits.MaxDataflowBytes))
      fail(-1, "{} blocks x {} registers is too large to verify", Blocks.size(),
           NumRegs);
    const AssignedRegs Assigned = solveAssignedRegs(Blocks, NumRegs);
    // Report reads in instruction order so the first bad one is named.
    for (size_t B = 0; B < Blocks.size(); ++B)
      if (Assigned.Reached[B])
        walkBlock(Blocks, B, Assigned.In[B], /*Check=*/true);
  }

  /// Splits the function at jump targets and after every ret, goto and if.
  BasicBlocks splitBlocks() const {
    const int64_t N = F.numInstrs();
    std::vector<char> Leader(N + 1, 0);
    Leader[0] = 1;
    for (int64_t L = 0; L < N; ++L) {
      InstrView I = instr(L);
      if (I.opcode() == Opcode::Goto)
        Leader[L + I.gotoOffset()] = 1;
      else if (I.opcode() == Opcode::If)
        Leader[L + I.ifFalseOffset()] = 1;
      if (I.opcode() != Opcode::Call)
        Leader[L + 1] = 1;
    }
    BasicBlocks Blocks;
    Blocks.BlockOf.resize(N);
    for (int64_t L = 0; L < N; ++L) {
      if (Leader[L])
        Blocks.Start.push_back(L);
      Blocks.BlockOf[L] = static_cast<int64_t>(Blocks.Start.size()) - 1;
    }
    Blocks.Start.push_back(N);
    return Blocks;
  }

  /// The fixed point of IN over the blocks, by a work list from the entry.
  AssignedRegs solveAssignedRegs(const BasicBlocks &Blocks,
                                 size_t NumRegs) const {
    const size_t NumBlocks = Blocks.size();
    AssignedRegs State{
        std::vector<RegSet>(NumBlocks, RegSet(NumRegs, /*All=*/true)),
        std::vector<char>(NumBlocks, 0)};
    State.In[0] = RegSet(NumRegs, /*All=*/false);
    for (int64_t P = 0; P < F.NumParams; ++P)
      State.In[0].set(P);
    State.Reached[0] = 1;
    std::vector<size_t> Work = {0}, Succ;
    std::vector<char> InWork(NumBlocks, 0);
    InWork[0] = 1;
    while (!Work.empty()) {
      size_t B = Work.back();
      Work.pop_back();
      InWork[B] = 0;
      RegSet Out = walkBlock(Blocks, B, State.In[B], /*Check=*/false);
      successors(Blocks, B, Succ);
      for (size_t S : Succ) {
        bool Changed = State.In[S].intersect(Out);
        if ((Changed || !State.Reached[S]) && !InWork[S]) {
          Work.push_back(S);
          InWork[S] = 1;
        }
        State.Reached[S] = 1;
      }
    }
    return State;
  }

  /// Walks block B from `In`, checking reads when `Check`; returns OUT.
  RegSet walkBlock(const BasicBlocks &Blocks, size_t B, RegSet Cur,
                   bool Check) const {
    for (int64_t L = Blocks.Start[B]; L < Blocks.Start[B + 1]; ++L) {
      InstrView I = instr(L);
      auto Read = [&](RegName R, std::string_view What) {
        if (Check && !isSpecialRegister(R) && !Cur.test(R))
          failAt({FuncIndex, L, R},
                 "{} reads register %{} before it is written on every "
                 "path that reaches it",
                 What, R);
      };
      switch (I.opcode()) {
      case Opcode::Call:
        for (int64_t A = 0; A < I.callNumArgs(); ++A) {
          Arg X = I.callArg(A);
          if (X.kind() == ArgKind::Register)
            Read(X.value(), fmt::format("argument {}", A + 1));
        }
        if (I.callDst() != kVoidRegister)
          Cur.set(I.callDst());
        break;
      case Opcode::Ret:
        Read(I.retReg(), "ret");
        break;
      case Opcode::If:
        Read(I.ifCond(), "if");
        break;
      case Opcode::Goto:
        break;
      }
    }
    return Cur;
  }

  /// The blocks control may pass to from the end of block B.
  void successors(const BasicBlocks &Blocks, size_t B,
                  std::vector<size_t> &Out) const {
    Out.clear();
    const int64_t Last = Blocks.Start[B + 1] - 1;
    InstrView I = instr(Last);
    switch (I.opcode()) {
    case Opcode::Goto:
      Out.push_back(Blocks.BlockOf[Last + I.gotoOffset()]);
      break;
    case Opcode::If:
      Out.push_back(Blocks.BlockOf[Last + I.ifFalseOffset()]);
      [[fallthrough]];
    case Opcode::Call:
      if (Last + 1 < F.numInstrs())
        Out.push_back(Blocks.BlockOf[Last + 1]);
      break;
    case Opcode::Ret:
      break;
    }
  }

  const Executable &Exe;
  const FunctionInfo &F;
  int64_t FuncIndex;
  const VerifierLimits &Limits;
};

} // namespace

namespace {

/// The executable-wide limits, before any function is looked at.
void checkSizes(const Executable &Exe, const VerifierLimits &Limits) {
  const auto NumFns = static_cast<int64_t>(Exe.functions().size());
  if (NumFns > Limits.MaxFunctions)
    throwError("VerifyError",
               fmt::format("{} functions is over the limit of {}", NumFns,
                           Limits.MaxFunctions));
  const auto NumConsts = static_cast<int64_t>(Exe.constants().size());
  if (NumConsts > Limits.MaxConstants)
    throwError("VerifyError",
               fmt::format("{} constants is over the limit of {}", NumConsts,
                           Limits.MaxConstants));
  const auto NumInstrs = static_cast<int64_t>(Exe.instrOffsets().size());
  if (NumInstrs > Limits.MaxInstructions)
    throwError("VerifyError",
               fmt::format("{} instructions is over the limit of {}",
                           NumInstrs, Limits.MaxInstructions));
  for (int64_t I = 0; I < NumConsts; ++I) {
    auto T = Exe.constants()[static_cast<size_t>(I)].as<Tensor>();
    if (!T)
      continue;
    const auto Bytes = static_cast<int64_t>(T->nbytes());
    if (Bytes > Limits.MaxTensorConstantBytes)
      throwError("VerifyError",
                 fmt::format("constant {}: a tensor of {} bytes is over the "
                             "limit of {} bytes",
                             I, Bytes, Limits.MaxTensorConstantBytes));
  }
}

} // namespace

void verifyExecutable(const Executable &Exe, const VerifierLimits &Limits) {
  checkSizes(Exe, Limits);
  const auto &Fns = Exe.functions();
  for (size_t I = 0; I < Fns.size(); ++I) {
    const FunctionInfo &F = Fns[I];
    if (F.Name.empty())
      throwError("VerifyError",
                 fmt::format("function table entry {} has no name", I));
    if (F.Kind == FunctionKind::Bytecode)
      FunctionVerifier(Exe, static_cast<int64_t>(I), Limits).run();
    else if (F.Kind != FunctionKind::Packed && F.Kind != FunctionKind::Native)
      throwError("VerifyError",
                 fmt::format("function '{}' has unknown kind {}", F.Name,
                             static_cast<int>(F.Kind)));
  }
}

} // namespace vmjit::vm
