//===- assembler_target.cpp - The vmasm assembler fuzz target -------------===//
//
// runAssemblerInput: vmasm text through the lexer, the assembler and the
// verifier. A program that assembles must also go through every other
// representation unchanged: binary image (serialize -> load), and
// disassembly (asm -> dis -> asm gives an equal executable, dis -> asm ->
// dis the same text), which is exact in this project.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

#include "vmjit/bytecode/verifier.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/text/disassembler.h"

#include <string>
#include <string_view>

namespace vmjit::fuzz {

using vm::Executable;

Outcome runAssemblerInput(std::span<const uint8_t> Data) {
  std::string_view Text(reinterpret_cast<const char *>(Data.data()),
                        Data.size());
  // `npy "PATH"` reads the file named by the input (even /dev/stdin).
  if (Text.find("npy") != std::string_view::npos)
    return Outcome::Rejected;
  std::shared_ptr<Executable> Exe;
  try {
    Exe = vm::assemble(Text, "fuzz.vmasm");
  } catch (const Error &E) {
    if (E.kind() != "ParseError" && E.kind() != "VerifyError")
      fail("the assembler threw an undocumented error kind: " + E.format());
    return Outcome::Rejected;
  }
  std::string Step = "verify";
  try {
    vm::verifyExecutable(*Exe);
    Step = "serialize -> load";
    std::string Image = vm::serializeExecutable(*Exe);
    std::shared_ptr<Executable> Loaded =
        vm::loadExecutableFromBytes(Image, "fuzz.bin");
    if (!Loaded->equals(*Exe))
      fail("serialize -> load changed the executable");
    Step = "disassemble";
    std::string Dis = vm::disassemble(*Exe);
    Step = "reassemble the disassembly";
    std::shared_ptr<Executable> Again = vm::assemble(Dis, "dis.vmasm");
    if (!Again->equals(*Exe))
      fail("asm -> dis -> asm changed the executable; the disassembly:\n" +
           Dis);
    Step = "disassemble the reassembled executable";
    std::string Dis2 = vm::disassemble(*Again);
    if (Dis2 != Dis)
      fail("dis -> asm -> dis changed the text:\n" + Dis + "\n--- became\n" +
           Dis2);
  } catch (const Error &E) {
    fail("an assembled program failed at " + Step + ": " + E.format());
  }
  return Outcome::Accepted;
}

} // namespace vmjit::fuzz
