//===- baseline_compiler.cpp - Tier 1: copy-and-patch ---------------------===//
//
// Two passes over the function with the same emitter: the first only sizes
// (and records where each instruction starts, for jumps and the entry
// table), the second copies the stencils into fresh pages and patches
// their holes. Layout: entry stencil, the instructions in order (their
// fast paths), the error exit; then, out of line, the slow paths of fused
// stencils and the stencils' out-of-line parts as they were emitted; then
// the table of instruction addresses (read by the entry stencil to start
// at any pc).
//
//===----------------------------------------------------------------------===//

#include "baseline_compiler.h"
#include "../call_size.h"
#include "../runtime_helpers.h"
#include "vmjit/bytecode/bytecode.h"
#include "vmjit/kernels/scalar_ops.h"
#include "vmjit/runtime/error.h"
#include "vmjit/vm/alloc_sites.h"
#include "vmjit/vm/feedback.h"

#include <cstring>
#include <fmt/format.h>
#include <limits>

namespace vmjit::jit::baseline {

#ifdef VMJIT_HAVE_STENCILS
#include "stencils.inc"
#endif

namespace {

namespace ops = kernels::scalar;

constexpr size_t kNumHoles = 0
#define VMJIT_HOLE_COUNT(Name, Wide) +1
    VMJIT_BASELINE_HOLES(VMJIT_HOLE_COUNT)
#undef VMJIT_HOLE_COUNT
    ;

} // namespace

#ifndef VMJIT_HAVE_STENCILS

bool available() noexcept { return false; }

std::unique_ptr<BaselineCode>
compileBaseline(const vm::Executable &, int64_t,
                const std::vector<CalleeBinding> &, const BaselineOptions &) {
  throwError("JITError",
             "the baseline tier has no stencils for this target (x86-64 only)");
}

#else

bool available() noexcept { return true; }

namespace {

[[noreturn]] void outOfRange(const StencilInfo &S, Hole H, int64_t V) {
  throwError("JITError",
             fmt::format("baseline: value {} does not fit hole {} of stencil "
                         "'{}'",
                         V, static_cast<int>(H), S.Name));
}

/// Lays out (W null: only sizes) or writes one function's code: bytes go
/// to W, addresses are those of the code at X (where it will run). A
/// stencil's in-line part goes at pos(), its out-of-line part (if any) at
/// OutlineBase + outlinePos(): after all the in-line code.
class Emitter {
public:
  Emitter(uint8_t *W, uint8_t *X, size_t OutlineBase)
      : W(W), XBase(X), OutlineBase(OutlineBase) {}
  size_t pos() const noexcept { return Pos; }
  size_t outlinePos() const noexcept { return OutPos; }
  bool writing() const noexcept { return W != nullptr; }
  /// Where offset `Off` of the code runs.
  int64_t addressAt(size_t Off) const noexcept {
    return reinterpret_cast<int64_t>(XBase + Off);
  }
  int64_t &operator[](Hole H) { return V[static_cast<size_t>(H)]; }

  /// Appends stencil `Id`, patched with the current hole values.
  void put(StencilId Id) { place(Id, /*OutOfLine=*/false); }

  /// Appends stencil `Id` whole to the out-of-line code (a slow path);
  /// returns where it will run (0 when only sizing).
  int64_t putOutOfLine(StencilId Id) {
    const int64_t At = W ? addressAt(OutlineBase + OutPos) : 0;
    place(Id, /*OutOfLine=*/true);
    return At;
  }

private:
  /// Copies stencil `Id`'s in-line part in line (or out of line) and its
  /// out-of-line part out of line.
  void place(StencilId Id, bool OutOfLine) {
    const StencilInfo &S = kStencils[static_cast<size_t>(Id)];
    size_t &Cursor = OutOfLine ? OutPos : Pos;
    const size_t Here = (OutOfLine ? OutlineBase : 0) + Cursor;
    Cursor += S.Hot.Size;
    const size_t Out = OutlineBase + OutPos;
    OutPos += S.Outline.Size;
    if (!W)
      return;
    (*this)[Hole::CONTINUE] = addressAt(Here + S.Hot.Size);
    (*this)[Hole::HERE] = addressAt(Here);
    (*this)[Hole::OUTLINE] = addressAt(Out);
    copy(S, S.Hot, Here);
    copy(S, S.Outline, Out);
  }

  void copy(const StencilInfo &S, const StencilPart &P, size_t At) {
    std::memcpy(W + At, kStencilBytes + P.ByteBegin, P.Size);
    for (uint32_t K = 0; K < P.NumRelocs; ++K)
      patch(S, At, kStencilRelocs[P.RelocBegin + K]);
  }

  void patch(const StencilInfo &S, size_t At, const StencilReloc &R) {
    uint8_t *Place = W + At + R.Offset;
    int64_t X = V[static_cast<size_t>(R.Target)] + R.Addend;
    switch (R.Kind) {
    case RelocKind::Abs64:
      std::memcpy(Place, &X, 8);
      return;
    case RelocKind::Abs32:
      if (X < 0 || X > int64_t(std::numeric_limits<uint32_t>::max()))
        outOfRange(S, R.Target, X);
      break;
    case RelocKind::Abs32S:
      break;
    case RelocKind::Rel32:
      X -= addressAt(At + R.Offset);
      break;
    }
    if (R.Kind != RelocKind::Abs32 &&
        (X < std::numeric_limits<int32_t>::min() ||
         X > std::numeric_limits<int32_t>::max()))
      outOfRange(S, R.Target, X);
    uint32_t Word = static_cast<uint32_t>(X);
    std::memcpy(Place, &Word, 4);
  }

  uint8_t *W;
  uint8_t *XBase;
  size_t OutlineBase;
  size_t Pos = 0, OutPos = 0;
  int64_t V[kNumHoles] = {};
};

StencilId scalarStencil(ops::Op O) {
  switch (O) {
#define VMJIT_SCALAR_STENCIL(Enum, Name, Arity)                                \
  case ops::Op::Enum:                                                          \
    return StencilId::Scalar##Enum;
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_STENCIL)
#undef VMJIT_SCALAR_STENCIL
  }
  __builtin_unreachable();
}

/// The fused stencil of `O` on registers.
StencilId scalarRegStencil(ops::Op O) {
  switch (O) {
#define VMJIT_SCALAR_STENCIL(Enum, Name, Arity)                                \
  case ops::Op::Enum:                                                          \
    return StencilId::Scalar##Enum##R;
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_STENCIL)
#undef VMJIT_SCALAR_STENCIL
  }
  __builtin_unreachable();
}

/// The fused stencil of binary `O` on a register and an immediate.
StencilId scalarImmStencil(ops::Op O) {
  switch (O) {
#define VMJIT_SCALAR_STENCIL_2(Enum)                                           \
  case ops::Op::Enum:                                                          \
    return StencilId::Scalar##Enum##I;
#define VMJIT_SCALAR_STENCIL_1(Enum)                                           \
  case ops::Op::Enum:                                                          \
    break;
#define VMJIT_SCALAR_STENCIL(Enum, Name, Arity)                                \
  VMJIT_SCALAR_STENCIL_##Arity(Enum)
    VMJIT_SCALAR_OPS(VMJIT_SCALAR_STENCIL)
#undef VMJIT_SCALAR_STENCIL
#undef VMJIT_SCALAR_STENCIL_1
#undef VMJIT_SCALAR_STENCIL_2
  }
  __builtin_unreachable(); // only binary operations have an immediate form
}

/// A register operand a fused stencil can read in place (not %vm or %void).
bool isPlainRegister(vm::Arg A) {
  return A.kind() == vm::ArgKind::Register && A.value() != vm::kVMRegister &&
         A.value() != vm::kVoidRegister;
}

bool fitsInt32(int64_t V) {
  return V >= std::numeric_limits<int32_t>::min() &&
         V <= std::numeric_limits<int32_t>::max();
}

/// Emits one function, in either pass.
class FunctionEmitter {
public:
  FunctionEmitter(const vm::Executable &Exe, int64_t Func,
                  const std::vector<CalleeBinding> &Callees,
                  const BaselineOptions &Opts)
      : Exe(Exe), F(Exe.function(Func)), Callees(Callees), Opts(Opts),
        Counted(Opts.Site != nullptr) {
    InstrStart.resize(static_cast<size_t>(F.numInstrs()) + 1);
  }

  /// Bytes of the entry and the instructions (after a pass).
  size_t hotBytes() const noexcept { return ErrorExit; }

  /// Pass 1: sizes; returns the bytes of code, in-line and out-of-line
  /// parts (the table follows).
  size_t size() {
    Emitter E(nullptr, nullptr, 0);
    emitAll(E);
    InlineBytes = E.pos();
    return InlineBytes + E.outlinePos();
  }

  /// Pass 2: writes `Code` (at least size() + 8 * instructions bytes; the
  /// table of instruction addresses follows the code, 8-aligned).
  void write(const CodeBlock &Code, size_t CodeBytes) {
    Emitter E(Code.writable(), Code.executable(), InlineBytes);
    auto *Table = reinterpret_cast<int64_t *>(Code.writable() + CodeBytes);
    for (int64_t PC = 0; PC < F.numInstrs(); ++PC)
      Table[PC] = E.addressAt(InstrStart[static_cast<size_t>(PC)]);
    E[Hole::PC_TABLE] = E.addressAt(CodeBytes);
    E[Hole::SITE] = reinterpret_cast<int64_t>(Opts.Site);
    E[Hole::NREGS] = F.RegisterFileSize;
    E[Hole::ARG_BYTES] = ArgBytes;
    E[Hole::ERROR] = E.addressAt(ErrorExit);
    E[Hole::DESTROY] = reinterpret_cast<int64_t>(&vmjit_jit_destroy);
    E[Hole::IF_ERROR] = reinterpret_cast<int64_t>(&vmjit_jit_if_error);
    E[Hole::STEP] = reinterpret_cast<int64_t>(&vmjit_jit_step);
    E[Hole::HOT] = reinterpret_cast<int64_t>(&vmjit_baseline_hot);
    E[Hole::CALL_INTO] = reinterpret_cast<int64_t>(&vmjit_baseline_call_into);
    emitAll(E);
  }

private:
  /// Layout: the entry, every instruction's hot code in order and the
  /// error exit; then, out of line, the fused stencils' slow paths and
  /// the stencils' out-of-line parts (so that hot code stays dense and
  /// falls through).
  void emitAll(Emitter &E) {
    E[Hole::FEEDBACK] = reinterpret_cast<int64_t>(Opts.Feedback);
    E[Hole::NPARAMS] = F.NumParams;
    E.put(Counted ? StencilId::EntryCounted : StencilId::Entry);
    for (int64_t PC = 0; PC < F.numInstrs(); ++PC) {
      InstrStart[static_cast<size_t>(PC)] = E.pos();
      emitInstr(E, PC);
    }
    ErrorExit = E.pos();
    E.put(StencilId::ErrorExit);
  }

  void setTarget(Emitter &E, int64_t PC, int64_t Offset) {
    const int64_t T = PC + Offset;
    E[Hole::TARGET_PC] = T;
    if (E.writing())
      E[Hole::TARGET] = E.addressAt(InstrStart[static_cast<size_t>(T)]);
  }

  void emitInstr(Emitter &E, int64_t PC) {
    vm::InstrView I = Exe.instr(F.StartInstr + PC);
    E[Hole::PC] = PC;
    switch (I.opcode()) {
    case vm::Opcode::Call:
      return emitCall(E, I);
    case vm::Opcode::Ret:
      if (I.retReg() == vm::kVoidRegister)
        return E.put(StencilId::RetNone);
      E[Hole::REG_A] = 16 * I.retReg();
      return E.put(StencilId::Ret);
    case vm::Opcode::Goto: {
      const int64_t Off = I.gotoOffset();
      if (Off == 1)
        return; // falls through to the next instruction
      setTarget(E, PC, Off);
      if (Off > 0)
        return E.put(StencilId::Goto);
      return E.put(Counted ? StencilId::GotoBackCounted : StencilId::GotoBack);
    }
    case vm::Opcode::If: {
      if (I.ifCond() == vm::kVoidRegister)
        return E.put(StencilId::IfNone);
      const int64_t Off = I.ifFalseOffset();
      E[Hole::REG_A] = 16 * I.ifCond();
      setTarget(E, PC, Off);
      if (Off > 0)
        return E.put(StencilId::If);
      return E.put(Counted ? StencilId::IfBackCounted : StencilId::IfBack);
    }
    }
    __builtin_unreachable(); // the verifier admits only the four opcodes
  }

  void emitArg(Emitter &E, vm::Arg A) {
    const int64_t V = A.value();
    switch (A.kind()) {
    case vm::ArgKind::Register:
      if (V == vm::kVMRegister)
        return E.put(StencilId::ArgVm);
      if (V == vm::kVoidRegister)
        return E.put(StencilId::ArgNone);
      E[Hole::REG_A] = 16 * V;
      return E.put(StencilId::ArgReg);
    case vm::ArgKind::Immediate:
      E[Hole::IMM] = V;
      return E.put(StencilId::ArgImm);
    case vm::ArgKind::ConstIdx:
      E[Hole::CONST] = 16 * V;
      return E.put(StencilId::ArgConst);
    case vm::ArgKind::FuncIdx:
      E[Hole::FUNC] = 8 * V;
      return E.put(StencilId::ArgFunc);
    }
    __builtin_unreachable(); // the verifier admits only the four kinds
  }

  /// The standard alloc_tensor of a register's storage, with the offset,
  /// shape, dtype and scope constants of the instruction: the site's hit
  /// inline, ahead of the arguments (which only a miss needs).
  void emitAllocTensorHit(Emitter &E, vm::InstrView I) {
    const int64_t PC = E[Hole::PC];
    if (!Opts.InlineBuiltins ||
        Callees[static_cast<size_t>(I.callFunc())].Inline !=
            SpecialBuiltin::AllocTensor ||
        !vm::allocTensorHitInlinable(I) || PC + 1 >= F.numInstrs())
      return;
    E[Hole::REG_A] = 16 * I.callDst();
    E[Hole::REG_B] = 16 * I.callArg(0).value();
    E[Hole::SITE_AT] = static_cast<int64_t>(sizeof(vm::AllocSite)) * PC;
    setTarget(E, PC, 1);
    E.put(StencilId::AllocTensorHit);
  }

  void emitCall(Emitter &E, vm::InstrView I) {
    const int64_t N = I.callNumArgs();
    if (16 * N > kMaxNativeArgBytes) // the frame's argument stack
      throwError("JITError",
                 fmt::format("baseline: a call with {} arguments in '{}'", N,
                             F.Name));
    ArgBytes = std::max(ArgBytes, 16 * N);
    if (Callees[static_cast<size_t>(I.callFunc())].CountAtCall) {
      E[Hole::FUNC] = 8 * I.callFunc();
      E.put(StencilId::CountCall);
    }
    if (!emitFusedScalar(E, I))
      emitCallBody(E, I);
  }

  /// How a Call runs as a fused scalar stencil (Hot and Slow).
  struct FusedScalar {
    bool Imm = false; ///< the second operand is an immediate
    StencilId Hot{}, Slow{};
  };

  /// scalar.* on registers, or on a register and an int32 immediate, into
  /// a register, with an instruction after it: true, with S filled in.
  /// (Filled in place: a returned struct of 16-bit fields came back
  /// through a store-forwarding stall.)
  bool fusedScalar(vm::InstrView I, int64_t PC, FusedScalar &S) const {
    const CalleeBinding &B = Callees[static_cast<size_t>(I.callFunc())];
    const std::optional<ops::Op> Op = scalarOpOf(B.Inline);
    if (!Opts.InlineBuiltins || !Op || I.callDst() == vm::kVoidRegister ||
        I.callNumArgs() != ops::arity(*Op) || PC + 1 >= F.numInstrs() ||
        !isPlainRegister(I.callArg(0)))
      return false;
    S.Hot = scalarRegStencil(*Op);
    if (ops::arity(*Op) == 1) {
      S.Slow = StencilId::ScalarSlowR1;
      return true;
    }
    const vm::Arg Rhs = I.callArg(1);
    if (isPlainRegister(Rhs)) {
      S.Slow = StencilId::ScalarSlowR;
      return true;
    }
    if (Rhs.kind() != vm::ArgKind::Immediate || !fitsInt32(Rhs.value()))
      return false;
    S.Imm = true;
    S.Hot = scalarImmStencil(*Op);
    S.Slow = StencilId::ScalarSlowI;
    return true;
  }

  /// A fused scalar stencil and, out of line, its slow path (the
  /// builtin's call on the same operands, then a jump to the next
  /// instruction), both patched with the same operands. False (nothing
  /// emitted) for any other Call.
  bool emitFusedScalar(Emitter &E, vm::InstrView I) {
    const int64_t PC = E[Hole::PC];
    FusedScalar S;
    if (!fusedScalar(I, PC, S))
      return false;
    const CalleeBinding &B = Callees[static_cast<size_t>(I.callFunc())];
    E[Hole::REG_A] = 16 * I.callDst();
    E[Hole::REG_B] = 16 * I.callArg(0).value();
    if (I.callNumArgs() == 2)
      E[S.Imm ? Hole::IMM32 : Hole::REG_C] =
          S.Imm ? I.callArg(1).value() : 16 * I.callArg(1).value();
    E[Hole::NARGS] = I.callNumArgs();
    E[Hole::ENTRY] = static_cast<int64_t>(B.Entry);
    E[Hole::SELF] = static_cast<int64_t>(B.Self);
    setTarget(E, PC, 1);
    E[Hole::COLD] = E.putOutOfLine(S.Slow);
    E.put(S.Hot);
    return true;
  }

  /// A Direct call of a special builtin bound inline, as its row's
  /// Tier1Form says (vm/special_builtins.h); false (nothing emitted) where
  /// the call is made as a call (with the wrong arguments: the call, which
  /// raises the arity error).
  bool emitInlineForm(Emitter &E, vm::InstrView I, const CalleeBinding &B) {
    const vm::SpecialBuiltinInfo &Row = vm::specialBuiltin(B.Inline);
    const bool Void = I.callDst() == vm::kVoidRegister;
    const bool Applies = vm::inlineFormApplies(B.Inline, I);
    switch (Row.Tier1) {
    case vm::Tier1Form::Call:
      return false;
    case vm::Tier1Form::ClearRegister:
      // A register clear, nothing into %void.
      if (!Applies)
        return false;
      if (!Void)
        E.put(StencilId::NullValue);
      return true;
    case vm::Tier1Form::SiteCall:
      // Through the VM's cache of this call site (every form: the site
      // handles what it does not cache).
      E[Hole::ALLOC_AT] =
          reinterpret_cast<int64_t>(vm::nativeHelperAddress(Row.SiteHelper));
      E.put(Void ? StencilId::CallSiteVoid : StencilId::CallSite);
      return true;
    case vm::Tier1Form::TensorCheck:
      // Tier 2's guard, the call when it fails.
      if (!Applies)
        return false;
      E[Hole::ENTRY] = static_cast<int64_t>(B.Entry);
      E[Hole::SELF] = static_cast<int64_t>(B.Self);
      E.put(Void ? StencilId::CheckTensorInfoVoid : StencilId::CheckTensorInfo);
      return true;
    case vm::Tier1Form::ScalarStencil:
      if (!Applies || Void)
        return false;
      E[Hole::ENTRY] = static_cast<int64_t>(B.Entry);
      E[Hole::SELF] = static_cast<int64_t>(B.Self);
      E.put(scalarStencil(*scalarOpOf(B.Inline)));
      return true;
    }
    return false;
  }

  /// A Call's code after its count: arguments and the call (or what
  /// replaces it inline).
  void emitCallBody(Emitter &E, vm::InstrView I) {
    const int64_t N = I.callNumArgs();
    emitAllocTensorHit(E, I);
    for (int64_t K = 0; K < N; ++K) {
      E[Hole::ARG] = 16 * K;
      emitArg(E, I.callArg(K));
    }
    const int64_t Callee = I.callFunc();
    const bool Void = I.callDst() == vm::kVoidRegister;
    const CalleeBinding &B = Callees[static_cast<size_t>(Callee)];
    E[Hole::REG_A] = Void ? 0 : 16 * I.callDst();
    E[Hole::NARGS] = N;
    if (B.How == CalleeBinding::Pool) {
      E[Hole::FUNC] = 8 * Callee;
      if (Void)
        return E.put(StencilId::CallPoolVoid);
      E.put(StencilId::CallPool);
      return noteResult(E);
    }
    if (Opts.InlineBuiltins && emitInlineForm(E, I, B))
      return;
    E[Hole::ENTRY] = static_cast<int64_t>(B.Entry);
    E[Hole::SELF] = static_cast<int64_t>(B.Self);
    if (Void)
      return E.put(StencilId::CallDirectVoid);
    E.put(StencilId::CallDirect);
    noteResult(E);
  }

  /// After a call into REG_A: its result into the site's feedback slot
  /// (BaselineOptions::Feedback).
  void noteResult(Emitter &E) {
    if (!Opts.Feedback)
      return;
    E[Hole::FEEDBACK] =
        reinterpret_cast<int64_t>(Opts.Feedback + F.NumParams + E[Hole::PC]);
    E.put(StencilId::NoteKind);
  }

  const vm::Executable &Exe;
  const vm::FunctionInfo &F;
  const std::vector<CalleeBinding> &Callees;
  const BaselineOptions &Opts;
  const bool Counted;
  std::vector<size_t> InstrStart;
  size_t ErrorExit = 0;
  size_t InlineBytes = 0; ///< after pass 1: where out-of-line parts start
  int64_t ArgBytes = 0;
};

} // namespace

std::unique_ptr<BaselineCode>
compileBaseline(const vm::Executable &Exe, int64_t Func,
                const std::vector<CalleeBinding> &Callees,
                const BaselineOptions &Opts) {
  FunctionEmitter FE(Exe, Func, Callees, Opts);
  const size_t CodeBytes = (FE.size() + 7) & ~size_t(7);
  const size_t TableBytes = 8 * static_cast<size_t>(Exe.function(Func).numInstrs());
  std::unique_ptr<BaselineCode> Code(new BaselineCode(CodeBytes + TableBytes));
  FE.write(Code->Memory, CodeBytes);
  Code->Memory.seal();
  uint8_t *Base = Code->Memory.executable();
  Code->Entry = reinterpret_cast<vm::NativeFn>(Base);
  Code->CodeBytes = CodeBytes;
  Code->HotBytes = FE.hotBytes();
  if (Opts.PerfMap)
    writePerfMapEntry(Base, CodeBytes,
                      fmt::format("vmjit:baseline:{}", Exe.function(Func).Name));
  return Code;
}

#endif // VMJIT_HAVE_STENCILS

} // namespace vmjit::jit::baseline
