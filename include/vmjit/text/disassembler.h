//===- vmjit/text/disassembler.h - vmasm text of an executable --*- C++ -*-===//
//
// The disassembler writes an executable as vmasm (spec/vmasm.md) such that
// assembling the text gives an equal executable (Executable::equals) and
// disassembling that gives the same text again. The layout:
//
//   .const $c0 = int 42              ; every constant, in pool order, named
//   .const $c1 = tensor float32 [2] [0.1, 2]    ; $cN for pool index N
//
//   .extern scalar.add               ; the function table, in order:
//   .native fused_kernel             ;   .extern / .native / .func
//   .native tir_add(a, b) .regs 3    ; a native function's parameters
//   .extern "my kernel;1"            ; a name that is no identifier: quoted
//
//   .func main(x, "x", "vm")         ; parameters by name; repeated ones,
//                                    ;   vm and non-identifiers quoted
//     .regs 8                        ; only if larger than the registers used
//     %1 = call scalar.add(%0, 1)    ; registers by number, %vm, $cN, @F
//     if %1 else L0                  ; labels L0, L1, ... in target order
//     ret %1
//   L0:
//     ret %0
//   .end
//
// Floats are written in their shortest exact form (float32, float16 and
// bfloat16 tensor elements in the shortest form that reads back to the same
// element), infinities as inf / -inf, the default quiet NaN as nan, other
// NaNs as nan(0xMANTISSA) (optionally signed); strings with \" \\ \n \t and
// \xHH for every other byte outside printable ASCII.
//
// Names are written bare when the assembler reads them back as the same
// name (an identifier; for a parameter, also not `vm` and not repeated in
// its list) and quoted otherwise, so any name survives. Limits: an empty
// function name and a native function whose parameter names do not match
// its parameter count (or whose register file is smaller) are errors.
// Equality after reassembly also assumes the layout the builder makes:
// bytecode functions' code in table order, packed entries with no
// parameters, registers or code range, native entries with no code range.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_TEXT_DISASSEMBLER_H
#define VMJIT_TEXT_DISASSEMBLER_H

#include "vmjit/bytecode/executable.h"
#include "vmjit/runtime/tensor.h"

#include <functional>
#include <string>

namespace vmjit::vm {

/// How disassemble writes tensor constants.
struct DisassembleOptions {
  /// When set, called for each tensor constant of at least NpyMinElements
  /// elements: it saves the tensor (as .npy) and returns the path the text
  /// should name, relative to the text's own file; the constant is written
  /// `tensor DTYPE [SHAPE] npy "PATH"`. Unset: every tensor is inline.
  std::function<std::string(size_t Index, const Tensor &T)> SaveTensor;
  int64_t NpyMinElements = 64;
};

/// The vmasm text of `Exe`; assembling it gives an executable equal to
/// `Exe`. Throws Error("ValueError") for a constant vmasm cannot write (a
/// value other than null, int, float, bool, string, dtype, shape or a CPU
/// tensor of a supported dtype), an empty function name, a native function
/// `.native` cannot express, or a function whose code range lies outside
/// the executable's code.
std::string disassemble(const Executable &Exe,
                        const DisassembleOptions &Opts = {});

} // namespace vmjit::vm

#endif // VMJIT_TEXT_DISASSEMBLER_H
