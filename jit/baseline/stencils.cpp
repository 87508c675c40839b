//===- stencils.cpp - The baseline tier's stencils --------------------------===//
//
// Compiled by clang at build time (never linked into vmjit): stencil_gen
// turns each `vmjit_stencil_<name>` function into a row of bytes and
// relocations (see stencil_abi.h). A bytecode instruction becomes one or
// more stencils: a Call is one argument stencil per argument, filling the
// function's argument stack, then a call stencil; the others are one each.
//
// Chain stencils share one signature and tail-call the next piece; the
// entry stencil has the native signature of vm/native_code.h.
//
//===----------------------------------------------------------------------===//

#include "stencil_abi.h"
#include "vmjit/kernels/scalar_ops.h"
#include "vmjit/runtime/c_api.h"
#include "vmjit/vm/alloc_sites.h"
#include "vmjit/vm/feedback.h"
#include "vmjit/vm/native_code.h"

#if !defined(__clang__) || !defined(__x86_64__)
#error "stencils are compiled by clang for x86-64"
#endif

using namespace vmjit::jit::baseline;
using vmjit::vm::NativeContext;
using vmjit::vm::StepControl;
namespace ops = vmjit::kernels::scalar;

typedef VMJITAny Val;
typedef struct Pool Pool; // std::atomic<FunctionObj *>[], as raw pointers

// preserve_none passes these in r12, r13, r14, r15, rdi: the register file,
// which the stencils address most, is not in r12 (an address off r12 takes
// one byte more).
#define CHAIN_ARGS                                                             \
  NativeContext *Ctx, Val *Regs, Val *Args, const Val *Consts, void **Funcs
#define CHAIN_PASS Ctx, Regs, Args, Consts, Funcs
#define PN __attribute__((preserve_none))

extern "C" {
#define VMJIT_DECLARE_HOLE(Name, Wide) extern char _JIT_##Name[];
VMJIT_BASELINE_HOLES(VMJIT_DECLARE_HOLE)
#undef VMJIT_DECLARE_HOLE
PN int _JIT_CONTINUE_FN(CHAIN_ARGS) __asm__("_JIT_CONTINUE");
PN int _JIT_TARGET_FN(CHAIN_ARGS) __asm__("_JIT_TARGET");
PN int _JIT_ERROR_FN(CHAIN_ARGS) __asm__("_JIT_ERROR");
PN int _JIT_COLD_FN(CHAIN_ARGS) __asm__("_JIT_COLD");
}

typedef PN int (*ChainFn)(CHAIN_ARGS);
typedef int (*SafeCall)(void *, const Val *, int32_t, Val *);
typedef void (*DestroyFn)(VMJITObject *, uint64_t);
typedef int (*IfErrorFn)(const Val *);
typedef int (*StepFn)(NativeContext *);
typedef void (*HotFn)(TierUpSite *);
typedef int (*CallIntoFn)(Val *, const Val *, int32_t, void *, void *);
typedef int (*AllocAtFn)(NativeContext *, int64_t, const Val *, int32_t,
                         Val *);

/// A small hole's value: a byte offset or count below 2^31.
#define SMALL(Name) ((intptr_t)_JIT_##Name)
/// A wide hole's value, materialized with one movabs.
#define WIDE(Name)                                                             \
  ({                                                                           \
    uint64_t V_;                                                               \
    __asm__("movabsq $_JIT_" #Name ", %0" : "=r"(V_));                         \
    V_;                                                                        \
  })
/// IMM32 sign-extended to 64 bits (a plain SMALL() could be zero-extended).
#define IMM32()                                                                \
  ({                                                                           \
    int64_t V_;                                                                \
    __asm__("movq $_JIT_IMM32, %0" : "=r"(V_));                                \
    V_;                                                                        \
  })
#define AT(Base, Name) ((Val *)((char *)(Base) + SMALL(Name)))
#define NEXT() [[clang::musttail]] return _JIT_CONTINUE_FN(CHAIN_PASS)
#define JUMP() [[clang::musttail]] return _JIT_TARGET_FN(CHAIN_PASS)
/// To the instruction's slow path (out of line; it runs the whole
/// instruction again, generically, and jumps to the next one).
#define COLD() [[clang::musttail]] return _JIT_COLD_FN(CHAIN_PASS)
#define FAIL()                                                                 \
  do {                                                                         \
    Ctx->ErrorPC = SMALL(PC);                                                  \
    [[clang::musttail]] return _JIT_ERROR_FN(CHAIN_PASS);                      \
  } while (0)

#define STENCIL(Name) extern "C" PN int vmjit_stencil_##Name(CHAIN_ARGS)

// Values move as two 8-byte words, never as one 16-byte access: the runtime
// writes them as two words (any.h's copyWords), and a 16-byte load of two
// recent 8-byte stores cannot be store-forwarded (a stall of ~15 cycles).
#define INLINE static inline __attribute__((always_inline))

INLINE void copyVal(Val *D, const Val *S) {
  uint64_t W0, W1;
  __builtin_memcpy(&W0, S, 8);
  __builtin_memcpy(&W1, (const char *)S + 8, 8);
  __asm__("" : "+r"(W0), "+r"(W1)); // keep the two words apart
  __builtin_memcpy(D, &W0, 8);
  __builtin_memcpy((char *)D + 8, &W1, 8);
}

/// Writes a value of type `Type` (zero padding) with payload `Bits`.
INLINE void setVal(Val *D, uint32_t Type, uint64_t Bits) {
  uint64_t W0 = Type;
  __asm__("" : "+r"(W0), "+r"(Bits));
  __builtin_memcpy(D, &W0, 8);
  __builtin_memcpy((char *)D + 8, &Bits, 8);
}

INLINE void release(const Val &V) {
  if (V.type_index >= kVMJITStaticObjectBegin) {
    VMJITObject *O = V.v_obj;
    uint64_t Old =
        __atomic_fetch_sub(&O->combined_ref_count, 1, __ATOMIC_RELEASE);
    if (__builtin_expect((Old & 0xffffffffu) == 1, 0))
      ((DestroyFn)WIDE(DESTROY))(O, Old);
  }
}

/// Moves an owned value into register REG_A, releasing the old one. The
/// release is expected not to be needed (TVM's code clears a register
/// after the last use of its value, vm.builtin.null_value), so it goes to
/// the stencil's out-of-line part.
INLINE void moveToA(Val *Regs, const Val &New) {
  Val *D = AT(Regs, REG_A);
  Val Old;
  copyVal(&Old, D);
  copyVal(D, &New);
  if (__builtin_expect(Old.type_index >= kVMJITStaticObjectBegin, 0))
    release(Old);
}

INLINE void setNone(Val *V) { setVal(V, kVMJITNone, 0); }

/// Releases every register of the frame (the native contract leaves the
/// register file all None).
INLINE void clearRegisters(Val *Regs) {
  Val *End = (Val *)((char *)Regs + 16 * SMALL(NREGS));
  for (Val *R = Regs; R != End; ++R) {
    release(*R);
    setNone(R);
  }
}

//===----------------------------------------------------------------------===//
// Entry: the native signature; runs the chain from the requested pc.
//===----------------------------------------------------------------------===//

INLINE int enter(NativeContext *Ctx, Val *Regs, const Val *Consts, void **Funcs,
      int64_t EntryPC) {
  Val *Args = (Val *)__builtin_alloca(SMALL(ARG_BYTES));
  ChainFn *Table = (ChainFn *)WIDE(PC_TABLE);
  return Table[EntryPC](CHAIN_PASS);
}

extern "C" int vmjit_stencil_entry(NativeContext *Ctx, Val *Regs,
                                   const Val *Consts, void **Funcs,
                                   int64_t EntryPC) {
  return enter(Ctx, Regs, Consts, Funcs, EntryPC);
}

/// Takes one from the site's countdown; true when it reaches 0. Threads
/// running the same code (VMs sharing a tier manager) race here: relaxed
/// atomic loads and stores, not a read-modify-write, so that a loop's back
/// edge pays no locked instruction. A decrement lost to the race only
/// delays the tier-up; vmjit_baseline_hot deduplicates the request.
INLINE bool countDown(TierUpSite *Site) {
  int64_t Left = __atomic_load_n(&Site->Countdown, __ATOMIC_RELAXED) - 1;
  __atomic_store_n(&Site->Countdown, Left, __ATOMIC_RELAXED);
  return Left <= 0;
}

/// Counts toward tier 2 (calls reach tier 2 through the pool entry, which
/// reads the best code at every call).
extern "C" int vmjit_stencil_entry_counted(NativeContext *Ctx, Val *Regs,
                                          const Val *Consts, void **Funcs,
                                          int64_t EntryPC) {
  TierUpSite *Site = (TierUpSite *)WIDE(SITE);
  if (__builtin_expect(countDown(Site), 0))
    ((HotFn)WIDE(HOT))(Site);
  if (EntryPC == 0) { // exact: VMs on several threads may share this code
    __atomic_fetch_add(&Site->Tier1Calls, 1, __ATOMIC_RELAXED);
    // The parameters, as the interpreter records them (FEEDBACK: the
    // function's feedback slots, or 0 when tier 2 wants none).
    if (auto *Fb = (vmjit::vm::FeedbackSlot *)WIDE(FEEDBACK))
      for (int64_t K = 0; K < SMALL(NPARAMS); ++K)
        vmjit::vm::feedback::note(Fb[K], Regs[K]);
  }
  return enter(Ctx, Regs, Consts, Funcs, EntryPC);
}

//===----------------------------------------------------------------------===//
// Arguments: fill slot ARG of the argument stack (borrowed views).
//===----------------------------------------------------------------------===//

STENCIL(arg_reg) {
  copyVal(AT(Args, ARG), AT(Regs, REG_A));
  NEXT();
}

STENCIL(arg_vm) {
  setVal(AT(Args, ARG), kVMJITOpaquePtr, (uint64_t)Ctx->VM);
  NEXT();
}

/// `%void`, which reads as None.
STENCIL(arg_none) {
  setNone(AT(Args, ARG));
  NEXT();
}

STENCIL(arg_imm) {
  setVal(AT(Args, ARG), kVMJITInt, WIDE(IMM));
  NEXT();
}

STENCIL(arg_const) {
  copyVal(AT(Args, ARG), AT(Consts, CONST));
  NEXT();
}

STENCIL(arg_func) {
  setVal(AT(Args, ARG), kVMJITFunction,
         (uint64_t)__atomic_load_n((void **)((char *)Funcs + SMALL(FUNC)),
                                   __ATOMIC_ACQUIRE));
  NEXT();
}

//===----------------------------------------------------------------------===//
// Calls: through the pool (bytecode callees: later swaps are seen) or
// direct (packed callees bound when the code was made); the result moves
// into REG_A or is dropped.
//===----------------------------------------------------------------------===//

INLINE SafeCall poolEntry(void **Funcs, void **Self) {
  *Self = __atomic_load_n((void **)((char *)Funcs + SMALL(FUNC)),
                          __ATOMIC_ACQUIRE);
  return *(SafeCall *)((char *)*Self + vmjit::kFunctionEntryOffset);
}

#define CALL_STENCILS(Kind, GetEntry)                                          \
  STENCIL(call_##Kind) {                                                       \
    void *Self;                                                                \
    SafeCall Entry = GetEntry;                                                 \
    Val R;                                                                     \
    R.type_index = kVMJITNone;                                                 \
    if (__builtin_expect(Entry(Self, Args, (int32_t)SMALL(NARGS), &R), 0))     \
      FAIL();                                                                  \
    moveToA(Regs, R);                                                          \
    NEXT();                                                                    \
  }                                                                            \
  STENCIL(call_##Kind##_void) {                                                \
    void *Self;                                                                \
    SafeCall Entry = GetEntry;                                                 \
    Val R;                                                                     \
    R.type_index = kVMJITNone;                                                 \
    if (__builtin_expect(Entry(Self, Args, (int32_t)SMALL(NARGS), &R), 0))     \
      FAIL();                                                                  \
    release(R);                                                                \
    NEXT();                                                                    \
  }

/// The standard alloc_tensor, alloc_storage or make_shape through the VM's
/// cache of this call site (ALLOC_AT: vmjit_jit_alloc_tensor, _storage or
/// _make_shape).
INLINE bool allocAt(NativeContext *Ctx, Val *Args, Val *R) {
  R->type_index = kVMJITNone;
  return ((AllocAtFn)WIDE(ALLOC_AT))(Ctx, SMALL(PC), Args,
                                     (int32_t)SMALL(NARGS), R) == 0;
}

STENCIL(call_site) {
  Val R;
  if (__builtin_expect(!allocAt(Ctx, Args, &R), 0))
    FAIL();
  moveToA(Regs, R);
  NEXT();
}

STENCIL(call_site_void) {
  Val R;
  if (__builtin_expect(!allocAt(Ctx, Args, &R), 0))
    FAIL();
  release(R);
  NEXT();
}

/// vm.builtin.alloc_tensor(%storage, offset, shape, dtype [, scope]) into
/// REG_A, with the storage in register REG_B and the rest constants of the
/// instruction: put before its arguments. When the site's view can be
/// handed out again (reusedConstantView, inline), it goes into REG_A and
/// the code jumps to the next instruction (TARGET); otherwise on to the
/// arguments and call_site. Ctx->Sites is null until a call through a
/// site made the function's sites (NativeContext::Sites).
STENCIL(alloc_tensor_hit) {
  const vmjit::vm::AllocSite *Sites = Ctx->Sites;
  if (__builtin_expect(Sites != nullptr, 1)) {
    const vmjit::vm::AllocSite &S =
        *(const vmjit::vm::AllocSite *)((const char *)Sites + SMALL(SITE_AT));
    if (VMJITObject *T = vmjit::vm::reusedConstantView(S, *AT(Regs, REG_B))) {
      Val V;
      setVal(&V, kVMJITTensor, (uint64_t)T);
      moveToA(Regs, V);
      JUMP();
    }
  }
  NEXT();
}

/// Adds one to the VM's count of the callee at FUNC (8 * index, as the
/// counts are 8 bytes each), ahead of a call of a packed function.
STENCIL(count_call) {
  ++*(uint64_t *)((char *)Ctx->CallCounts + SMALL(FUNC));
  NEXT();
}

CALL_STENCILS(pool, poolEntry(Funcs, &Self))
CALL_STENCILS(direct, (Self = (void *)WIDE(SELF), (SafeCall)WIDE(ENTRY)))

/// After a call tier 2 does not inline, in code that counts toward tier 2:
/// the result in REG_A goes into the site's feedback slot (FEEDBACK), as
/// the interpreter records it (vm::feedback::note).
STENCIL(note_kind) {
  vmjit::vm::feedback::note(*(vmjit::vm::FeedbackSlot *)WIDE(FEEDBACK),
                            *AT(Regs, REG_A));
  NEXT();
}

/// The standard vm.builtin.null_value() into REG_A: no call, the old value
/// released and None stored (TVM's compiler emits it after the last use of
/// every value). Into `%void` it is no code at all.
STENCIL(null_value) {
  Val *D = AT(Regs, REG_A);
  Val Old;
  copyVal(&Old, D);
  setNone(D);
  // A view one of this VM's allocation sites holds too, and nothing else:
  // no atomic operation (the interpreter's test, inline here).
  if (vmjit::vm::releasedToSite(Old, Ctx->VM))
    NEXT();
  release(Old);
  NEXT();
}

//===----------------------------------------------------------------------===//
// vm.builtin.check_tensor_info(x, ndim, [dtype,] text): tier 2's guard
// (jit/lowering.cpp) inline; anything else through the direct call of the
// builtin, which raises the interpreter's error.
//===----------------------------------------------------------------------===//

INLINE bool strOrNone(int32_t T) {
  return T == kVMJITNone || T == kVMJITStr || T == kVMJITSmallStr ||
         T == kVMJITRawStr;
}

/// x a tensor of the rank (any for -1) and dtype (any for None) asked
/// for, the text a str or None: the builtin would return x.
INLINE bool tensorInfoHolds(const Val *Args) {
  const int32_t N = (int32_t)SMALL(NARGS);
  const Val &X = Args[0], &NDim = Args[1], &Text = Args[N - 1];
  if (X.type_index != kVMJITTensor || NDim.type_index != kVMJITInt ||
      !strOrNone(Text.type_index))
    return false;
  const DLTensor *T =
      (const DLTensor *)((char *)X.v_obj + vmjit::kTensorDLTensorOffset);
  if (NDim.v_int64 != -1 && T->ndim != NDim.v_int64)
    return false;
  if (N != 4 || Args[2].type_index == kVMJITNone)
    return true;
  const DLDataType D = Args[2].v_dtype;
  return Args[2].type_index == kVMJITDataType && T->dtype.code == D.code &&
         T->dtype.bits == D.bits && T->dtype.lanes == D.lanes;
}

/// The builtin itself (ENTRY, SELF): false with its error raised.
INLINE bool callDirect(Val *Args, Val *R) {
  R->type_index = kVMJITNone;
  return ((SafeCall)WIDE(ENTRY))((void *)WIDE(SELF), Args,
                                 (int32_t)SMALL(NARGS), R) == 0;
}

STENCIL(check_tensor_info) {
  Val R;
  if (__builtin_expect(tensorInfoHolds(Args), 1)) {
    copyVal(&R, &Args[0]); // x, with a reference of its own
    __atomic_fetch_add(&R.v_obj->combined_ref_count, 1, __ATOMIC_RELAXED);
  } else if (!callDirect(Args, &R)) {
    FAIL();
  }
  moveToA(Regs, R);
  NEXT();
}

STENCIL(check_tensor_info_void) {
  if (__builtin_expect(!tensorInfoHolds(Args), 0)) {
    Val R;
    if (!callDirect(Args, &R))
      FAIL();
    release(R);
  }
  NEXT();
}

//===----------------------------------------------------------------------===//
// scalar.*: the int fast path inline; anything else (floats, bools,
// division by zero, errors) through the direct call of the builtin.
//===----------------------------------------------------------------------===//

/// The call itself, out of line (one copy for every slow path).
INLINE bool fallback(Val *Regs, Val *Args) {
  return ((CallIntoFn)WIDE(CALL_INTO))(AT(Regs, REG_A), Args,
                                       (int32_t)SMALL(NARGS),
                                       (void *)WIDE(ENTRY),
                                       (void *)WIDE(SELF)) == 0;
}

template <ops::Op O> INLINE bool scalarFast(Val *Regs, Val *Args) {
  const Val &A = Args[0];
  if (A.type_index != kVMJITInt)
    return false;
  int64_t Out;
  if constexpr (ops::arity(O) == 1) {
    if (!ops::intOp<O>(A.v_int64, 0, Out))
      return false;
  } else {
    const Val &B = Args[1];
    if (B.type_index != kVMJITInt || !ops::intOp<O>(A.v_int64, B.v_int64, Out))
      return false;
  }
  Val *D = AT(Regs, REG_A);
  Val Old;
  copyVal(&Old, D);
  setVal(D, ops::returnsBool(O) ? kVMJITBool : kVMJITInt, (uint64_t)Out);
  release(Old);
  return true;
}

#define SCALAR_STENCIL(Enum, Name, Arity)                                      \
  STENCIL(scalar_##Enum) {                                                     \
    if (__builtin_expect(!scalarFast<ops::Op::Enum>(Regs, Args), 0) &&         \
        !fallback(Regs, Args))                                                 \
      FAIL();                                                                  \
    NEXT();                                                                    \
  }
VMJIT_SCALAR_OPS(SCALAR_STENCIL)
#undef SCALAR_STENCIL

//===----------------------------------------------------------------------===//
// scalar.* fused: the whole Call in one stencil when its operands are
// registers (REG_B, REG_C) or a register and a small immediate (IMM32),
// reading them in place (no argument stack). Only the hot path is here:
// int operands into a register that holds no object. Anything else jumps
// to the instruction's slow path (COLD: the argument stencils and the
// stencil above, laid out after the function), which runs the Call again
// from the start: nothing is written before every check has passed.
//===----------------------------------------------------------------------===//

template <ops::Op O>
INLINE bool intInto(Val *Regs, const Val *A, int32_t BType, int64_t B) {
  Val *D = AT(Regs, REG_A);
  if (D->type_index >= kVMJITStaticObjectBegin || A->type_index != kVMJITInt ||
      BType != kVMJITInt)
    return false;
  int64_t Out;
  if (!ops::intOp<O>(A->v_int64, B, Out))
    return false;
  // The tag word as an immediate store (setVal's barrier would first put
  // it in a register); the payload stays an 8-byte store of its own.
  const uint64_t Tag = ops::returnsBool(O) ? kVMJITBool : kVMJITInt;
  __builtin_memcpy(D, &Tag, 8);
  __asm__("" : "+r"(Out));
  __builtin_memcpy((char *)D + 8, &Out, 8);
  return true;
}

/// Operands in registers: REG_B (and REG_C for a binary operation).
#define SCALAR_REG_STENCIL(Enum, Name, Arity)                                  \
  STENCIL(scalar_##Enum##_r) {                                                 \
    const Val *A = AT(Regs, REG_B);                                            \
    const Val *B = Arity == 2 ? AT(Regs, REG_C) : A;                           \
    if (__builtin_expect(                                                      \
            !intInto<ops::Op::Enum>(Regs, A, B->type_index, B->v_int64), 0))   \
      COLD();                                                                  \
    NEXT();                                                                    \
  }
VMJIT_SCALAR_OPS(SCALAR_REG_STENCIL)
#undef SCALAR_REG_STENCIL

/// A binary operation of register REG_B and the immediate IMM32.
#define SCALAR_IMM_STENCIL_2(Enum)                                             \
  STENCIL(scalar_##Enum##_i) {                                                 \
    if (__builtin_expect(!intInto<ops::Op::Enum>(Regs, AT(Regs, REG_B),        \
                                                 kVMJITInt, IMM32()),          \
                         0))                                                   \
      COLD();                                                                  \
    NEXT();                                                                    \
  }
#define SCALAR_IMM_STENCIL_1(Enum)
#define SCALAR_IMM_STENCIL(Enum, Name, Arity) SCALAR_IMM_STENCIL_##Arity(Enum)
VMJIT_SCALAR_OPS(SCALAR_IMM_STENCIL)
#undef SCALAR_IMM_STENCIL
#undef SCALAR_IMM_STENCIL_1
#undef SCALAR_IMM_STENCIL_2

/// The slow paths of the fused stencils, one for every operation: the
/// builtin's call (ENTRY, SELF: floats, bools, errors, an old object in
/// REG_A) on the same operands, then on to the next instruction (TARGET).
#define SLOW_CALL()                                                            \
  do {                                                                         \
    if (!fallback(Regs, Args))                                                 \
      FAIL();                                                                  \
    JUMP();                                                                    \
  } while (0)

STENCIL(scalar_slow_r1) {
  copyVal(&Args[0], AT(Regs, REG_B));
  SLOW_CALL();
}

STENCIL(scalar_slow_r) {
  copyVal(&Args[0], AT(Regs, REG_B));
  copyVal(&Args[1], AT(Regs, REG_C));
  SLOW_CALL();
}

STENCIL(scalar_slow_i) {
  copyVal(&Args[0], AT(Regs, REG_B));
  setVal(&Args[1], kVMJITInt, (uint64_t)IMM32());
  SLOW_CALL();
}
#undef SLOW_CALL

//===----------------------------------------------------------------------===//
// Control flow. A backward jump is a step (budget, deadline, interrupt) and,
// in counted code, a hotness tick toward tier 2, which it enters (OSR) at
// the target once tier 2 exists.
//===----------------------------------------------------------------------===//

INLINE bool step(NativeContext *Ctx) {
  StepControl *C = Ctx->Control;
  bool OutOfFuel = --C->Fuel < 0;
  bool Interrupted =
      __atomic_load_n((uint32_t *)&C->Interrupt, __ATOMIC_RELAXED) != 0;
  if (__builtin_expect(OutOfFuel | Interrupted, 0))
    return ((StepFn)WIDE(STEP))(Ctx) == 0;
  return true;
}

/// Counted backward jumps: 0 go on, else the frame's return code (it
/// finished in tier 2).
INLINE int tierUp(CHAIN_ARGS, bool *Done) {
  TierUpSite *Site = (TierUpSite *)WIDE(SITE);
  if (__builtin_expect(countDown(Site), 0))
    ((HotFn)WIDE(HOT))(Site);
  void *T2 = __atomic_load_n(&Site->Tier2, __ATOMIC_ACQUIRE);
  if (__builtin_expect(T2 == nullptr, 1))
    return 0;
  __atomic_fetch_add(&Site->Tier2Entries, 1, __ATOMIC_RELAXED);
  *Done = true;
  return ((vmjit::vm::NativeFn)T2)(Ctx, (vmjit::Any *)Regs,
                                   (const vmjit::Any *)Consts,
                                   (std::atomic<vmjit::FunctionObj *> *)Funcs,
                                   SMALL(TARGET_PC));
}

STENCIL(goto) { JUMP(); }

STENCIL(goto_back) {
  if (__builtin_expect(!step(Ctx), 0))
    FAIL();
  JUMP();
}

/// A counted backward jump: the step, the hotness tick, then the target
/// (or tier 2, which finishes the frame).
#define JUMP_BACK_COUNTED()                                                    \
  do {                                                                         \
    if (__builtin_expect(!step(Ctx), 0))                                       \
      FAIL();                                                                  \
    bool Done = false;                                                         \
    int Rc = tierUp(CHAIN_PASS, &Done);                                        \
    if (Done)                                                                  \
      return Rc;                                                               \
    JUMP();                                                                    \
  } while (0)

STENCIL(goto_back_counted) { JUMP_BACK_COUNTED(); }

#define IF_HEAD()                                                              \
  const Val *C = AT(Regs, REG_A);                                              \
  if (__builtin_expect(C->type_index != kVMJITInt &&                          \
                           C->type_index != kVMJITBool,                        \
                       0)) {                                                   \
    ((IfErrorFn)WIDE(IF_ERROR))(C);                                            \
    FAIL();                                                                    \
  }                                                                            \
  if (C->v_int64 != 0)                                                         \
    NEXT();

STENCIL(if) {
  IF_HEAD();
  JUMP();
}

STENCIL(if_back) {
  IF_HEAD();
  if (__builtin_expect(!step(Ctx), 0))
    FAIL();
  JUMP();
}

STENCIL(if_back_counted) {
  IF_HEAD();
  JUMP_BACK_COUNTED();
}

STENCIL(ret) {
  Val *Src = AT(Regs, REG_A);
  copyVal((Val *)Ctx->Result, Src);
  setNone(Src);
  clearRegisters(Regs);
  return 0;
}

/// `ret %void`: returns None.
STENCIL(ret_none) {
  setNone((Val *)Ctx->Result);
  clearRegisters(Regs);
  return 0;
}

/// `if %void`: None is never a condition.
STENCIL(if_none) {
  Val None;
  setNone(&None);
  ((IfErrorFn)WIDE(IF_ERROR))(&None);
  FAIL();
}

STENCIL(error_exit) {
  clearRegisters(Regs);
  return -1;
}
