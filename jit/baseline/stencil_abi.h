//===- stencil_abi.h - What stencils and their patcher share ----*- C++ -*-===//
//
// The baseline tier (tier 1) is copy-and-patch: the stencils in
// stencils.cpp are compiled by clang at build time; stencil_gen extracts
// their bytes and relocations into a generated table; at run time the
// baseline compiler copies one stencil after another and patches their
// holes. This header is the one place that names the holes and the
// helpers, for all three (like ORC's OrcRTBridge.h).
//
// A hole is an external symbol a stencil refers to:
//  - small holes (`extern char _JIT_X[]`, used as a byte offset or a small
//    integer): 32-bit relocations (the stencils use the small code model);
//  - wide holes (VMJIT_HOLE64): a `movabs` of a 64-bit value;
//  - jump holes (`_JIT_CONTINUE`, `_JIT_TARGET`, `_JIT_ERROR`, `_JIT_COLD`):
//    tail calls to the next piece of code, a jump target, the function's
//    error exit, and the instruction's slow path (laid out after the
//    function's hot code, so that the hot path of a fused stencil falls
//    through and stays short).
//
// Stencils of one function tail-call each other with clang's preserve_none
// convention, which keeps the five chain arguments in callee-saved
// registers (r12-r15, rdi) so calls out of a stencil save nothing.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_JIT_BASELINE_STENCIL_ABI_H
#define VMJIT_JIT_BASELINE_STENCIL_ABI_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vmjit::jit::baseline {

/// Symbol names the layout pass and the extractor read (stencils.cpp
/// spells them by token pasting): a stencil's function, its out-of-line
/// part, and the prefix of every hole (`_JIT_<Name>`).
inline constexpr std::string_view kStencilSymbolPrefix = "vmjit_stencil_";
inline constexpr std::string_view kOutlineSymbolPrefix = "vmjit_outline_";
inline constexpr std::string_view kHoleSymbolPrefix = "_JIT_";

/// Every hole: X(Name, Wide). The stencil symbol is `_JIT_<Name>`.
#define VMJIT_BASELINE_HOLES(X)                                                \
  /* small: byte offsets and counts */                                         \
  X(REG_A, false)     /* byte offset of a register (16 * index) */             \
  X(REG_B, false)     /* byte offset of a second register */                   \
  X(REG_C, false)     /* byte offset of a third register */                    \
  X(IMM32, false)     /* an immediate argument that fits in int32 */           \
  X(ARG, false)       /* byte offset of an argument slot (16 * k) */           \
  X(CONST, false)     /* byte offset of a constant (16 * index) */             \
  X(FUNC, false)      /* byte offset of a pool entry (8 * index) */            \
  X(NARGS, false)     /* number of arguments of a call */                      \
  X(PC, false)        /* the instruction (for ErrorPC) */                      \
  X(TARGET_PC, false) /* a jump's target instruction (for OSR) */              \
  X(NREGS, false)     /* registers of the function */                          \
  X(ARG_BYTES, false) /* bytes of the function's argument stack */             \
  X(SITE_AT, false)   /* byte offset of an instruction's vm::AllocSite */      \
  X(NPARAMS, false)   /* parameters of the function */                         \
  /* wide: 64-bit values */                                                    \
  X(IMM, true)       /* an immediate argument */                               \
  X(ENTRY, true)     /* a direct callee's safe-call entry */                   \
  X(SELF, true)      /* ... and the `self` it is called with */                \
  X(PC_TABLE, true)  /* the function's instruction -> code table */            \
  X(SITE, true)      /* the function's TierUpSite */                           \
  X(DESTROY, true)   /* vmjit_jit_destroy */                                   \
  X(IF_ERROR, true)  /* vmjit_jit_if_error */                                  \
  X(STEP, true)      /* vmjit_jit_step */                                      \
  X(HOT, true)       /* vmjit_baseline_hot */                                  \
  X(CALL_INTO, true) /* vmjit_baseline_call_into */                            \
  X(ALLOC_AT, true)  /* vmjit_jit_alloc_tensor, _storage or _make_shape */     \
  X(FEEDBACK, true)  /* type feedback: the function's bytes, or a site's */    \
  /* jumps */                                                                  \
  X(CONTINUE, false) /* the next piece */                                      \
  X(TARGET, false)   /* a jump target */                                       \
  X(ERROR, false)    /* the function's error exit */                           \
  X(COLD, false)     /* the instruction's out-of-line slow path */             \
  X(HERE, false)     /* this stencil's in-line part */                         \
  X(OUTLINE, false)  /* this stencil's out-of-line part */

enum class Hole : uint8_t {
#define VMJIT_HOLE_ENUM(Name, Wide) Name,
  VMJIT_BASELINE_HOLES(VMJIT_HOLE_ENUM)
#undef VMJIT_HOLE_ENUM
};

/// How a relocation patches its hole.
enum class RelocKind : uint8_t {
  Abs64,  ///< 8 bytes: value + addend
  Abs32,  ///< 4 bytes, zero-extended: value + addend < 2^32
  Abs32S, ///< 4 bytes, sign-extended: value + addend in int32
  Rel32,  ///< 4 bytes: value + addend - place (jumps and calls)
};

/// One relocation of a stencil (the generated table's rows).
struct StencilReloc {
  uint32_t Offset; ///< where in the stencil's bytes
  RelocKind Kind;
  Hole Target;
  int32_t Addend;
};

/// One part of a stencil in the generated table.
struct StencilPart {
  uint32_t ByteBegin; ///< into the table's byte array
  uint32_t Size;      ///< bytes, without a trailing jump to _JIT_CONTINUE
  uint32_t RelocBegin;
  uint32_t NumRelocs;
};

/// One stencil of the generated table: the part copied in line, and the
/// part laid out after the function (what clang placed after the hot
/// path: error exits, the release of a last reference; may be empty).
/// Branches between them go through the holes HERE and OUTLINE.
struct StencilInfo {
  const char *Name;
  StencilPart Hot;
  StencilPart Outline;
};

/// Per function of a tier manager: the hotness count of its baseline code
/// (entries and backward jumps) toward tier 2, and tier 2's code once it
/// exists (baseline code at a backward jump moves its frame there). The
/// stencils read these fields at fixed offsets.
struct TierUpSite {
  /// Counts down; the stencil that takes it to 0 calls vmjit_baseline_hot.
  /// Relaxed atomic loads and stores (a decrement may be lost to a race).
  int64_t Countdown;
  /// Tier-2 code (a NativeFn) or null. Written once, with release order.
  void *Tier2;
  /// Frames that moved from baseline code into tier 2 at a backward jump.
  uint64_t Tier2Entries;
  /// Calls that ran baseline code (a relaxed atomic increment: exact).
  uint64_t Tier1Calls;
  /// For vmjit_baseline_hot.
  void *Manager;
  int64_t Func;
};
static_assert(offsetof(TierUpSite, Countdown) == 0);
static_assert(offsetof(TierUpSite, Tier2) == 8);
static_assert(offsetof(TierUpSite, Tier2Entries) == 16);
static_assert(offsetof(TierUpSite, Tier1Calls) == 24);

} // namespace vmjit::jit::baseline

#endif // VMJIT_JIT_BASELINE_STENCIL_ABI_H
