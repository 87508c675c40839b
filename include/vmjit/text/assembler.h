//===- vmjit/text/assembler.h - The vmasm assembler -------------*- C++ -*-===//
//
// Turns vmasm text (docs: spec/vmasm.md, the contract) into a verified
// Executable, built through ExecutableBuilder. Errors in the text are one
// Error("ParseError", "FILE:LINE:COLUMN: error: ...") for the first error in
// the file (the one at the smallest line and column; every line is checked,
// so a later syntax error never hides an earlier mistake); an executable
// the verifier rejects is Error("VerifyError", "FILE: function 'F', ...").
//
// Decisions beyond the contract
// -----------------------------
// Function table. Every `.func`, `.extern` and `.native` declaration takes
//   its place in the order it appears in the file; then every callee or
//   `@F` that is not declared becomes a packed function, in order of first
//   use. `dis` declares every function in table order, so its output
//   reassembles to the same table. Declaring a name twice with different
//   kinds, or defining a `.func` twice, is an error; repeating an `.extern`
//   (or `.native`) is allowed.
// Extension directives.
//   `.native NAME` declares a native function (resolved like a packed one);
//   `.native NAME(PARAMS) .regs N` also gives its parameters and register
//   file (TVM's VMTIR functions), both parts optional, N defaulting to the
//   parameter count and never smaller. Repeating a `.native` with other
//   parameters or registers is an error.
//   `.regs N` inside a function body makes the register file N registers;
//   N may not be smaller than the registers the function uses, and appears
//   at most once per function.
// Names. A function name is an identifier or a string (`.func "a-b"(x)`,
//   `call "k;1"(%0)`, `@"k;1"`), any non-empty string, the string of an
//   identifier being that identifier. A parameter is an identifier, which
//   names its register (unique among the unquoted ones, not `vm`), or a
//   string, which is only its name in the function table (it may repeat,
//   be `vm` or be any string; its register is `%N`, and `%NAME` of a name
//   only a quoted parameter has is an error).
// Registers. Parameters are %0..%k-1 and may be named (`%x`). `%N` is a
//   register by number (below 2^54). A fresh `%name` gets the lowest number
//   at or above the parameter count that is neither given to an earlier
//   name nor written as `%N` anywhere in the function, in order of first
//   appearance, so a named register never aliases a numbered one. `%vm` is
//   the VM register: it is only a call argument (not a destination, `ret`
//   or `if` operand) and no parameter may be called `vm`. `%void` is the
//   void register: as a destination it drops the result, read (argument,
//   `ret`, `if`) it is None; no parameter may be called `void`. The register file
//   is the highest register used plus one, at least the parameter count, or
//   `.regs`.
// Labels. `NAME:` stands alone on its line and names the next instruction
//   of its function; labels are per function. A duplicate label, a jump to
//   an unknown label, or a label with no instruction after it in its
//   function is an error. `goto`/`if` targets may also be integers (a sign
//   is optional): offsets from the jump itself.
// Constants. `.const $NAME = VALUE` appends exactly one pool entry (no
//   de-duplication). `.const $N = ...` (a number) is accepted when N is the
//   index the entry gets. `$NAME` and `$N` may be used before the `.const`
//   that defines them; at the end of the file the name must exist and the
//   index must be in the pool. Values are stored as: int -> int64, float
//   -> double, bool -> bool, str -> string, dtype -> DLDataType (any name
//   vmjit::parseDType reads, e.g. `float32x4`, `handle`), shape -> Shape
//   (dimensions may be any int64), tensor -> a compact CPU Tensor, null ->
//   None. `.const` may appear inside or outside functions.
// Numbers. Integers are decimal or `0x` hex with an optional sign and must
//   fit the target (int64 for `int`, 56 signed bits for an immediate, the
//   element type for tensors). Floats are C syntax, decimal or hex (`0x1p-3`),
//   with `inf`, `infinity`, `nan`; `nan(0xM)` is a NaN whose mantissa
//   (payload and quiet bit) is M in the target format, which is how `dis`
//   writes NaNs other than the default quiet NaN; a sign applies to
//   NaNs too (`-nan`). A finite literal that would round to infinity or to
//   zero (but is not zero) in its format is an error.
// Tensors. `tensor DTYPE [SHAPE] [V, ...]` takes exactly as many values as
//   the shape has elements (one for `[]`), row-major, in a flat list. DTYPE
//   is bool, int8..int64, uint8..uint64, float16, bfloat16, float32 or
//   float64 (one lane). Integer dtypes take integers in range; float dtypes
//   take floats or integers (rounded to nearest even, float16 and bfloat16
//   included); bool takes true, false or an integer 0..255 (the byte).
//   `npy "PATH"` reads vmjit::vm::readNpy(PATH), PATH relative to the
//   directory of the assembled file's name; its dtype and shape must be
//   the ones written.
// Text. Lines may end in CRLF. String escapes are exactly \n \t \\ \" \xHH;
//   any other byte but a newline, a backslash or a double quote stands
//   for itself.
// Errors. A function without instructions (reported at its `.end`), `.end`
//   without `.func`, `.func` inside a function, an instruction, label or
//   `.regs` outside a function, and a missing `.end` (reported at the end
//   of the file) are parse errors. A line with an error is dropped but
//   still counts for what it defines (its label, constant name, function
//   start or end, or one instruction), so it causes no other error.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TEXT_ASSEMBLER_H
#define VMJIT_TEXT_ASSEMBLER_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/bytecode/verifier.h"

#include <memory>
#include <string>
#include <string_view>

namespace vmjit::vm {

/// Assembles vmasm text. `FileName` is used in messages, in the source
/// positions the executable keeps (Executable::sourceMap, which runtime
/// errors name) and to resolve `npy "path"` relative to the file's
/// directory. Throws Error("ParseError") for the first error in the text
/// and Error("VerifyError") when the verifier rejects the result (under
/// `Limits`).
std::shared_ptr<Executable> assemble(std::string_view Text,
                                     const std::string &FileName,
                                     const VerifierLimits &Limits = {});

/// Reads and assembles a .vmasm file; throws Error("IOError") if it cannot
/// be read, otherwise as assemble().
std::shared_ptr<Executable> assembleFile(const std::string &Path,
                                         const VerifierLimits &Limits = {});

} // namespace vmjit::vm

#endif // VMJIT_TEXT_ASSEMBLER_H
