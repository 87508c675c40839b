// Tests what docs/jit.md promises of float results across tiers: every
// mode agrees on whether a result is NaN and on every bit of every other
// float; only a NaN's sign and payload may differ, and only for the float
// operations tier 2 gives LLVM (Inputs/float_ops.vmasm).
#include "EveryMode.h"
#include "TestInputs.h"
#include "vmjit/runtime/array.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

std::shared_ptr<Executable> program() {
  static std::shared_ptr<Executable> Exe =
      jittest::assembleInput("float_ops.vmasm");
  return Exe;
}

/// The eight results of ops(X, Y), as bit patterns.
std::vector<uint64_t> bitsOf(VirtualMachine &VM, double X, double Y) {
  Array T = VM.call("ops", X, Y).cast<Array>();
  std::vector<uint64_t> Out;
  for (size_t I = 0; I < T.size(); ++I)
    Out.push_back(std::bit_cast<uint64_t>(T[I].cast<double>()));
  return Out;
}

bool isNaNBits(uint64_t B) { return std::isnan(std::bit_cast<double>(B)); }

TEST(FloatBitsTest, EveryModeAgreesButOnWhichNaN) {
  const double NaN = std::numeric_limits<double>::quiet_NaN();
  const double Inf = std::numeric_limits<double>::infinity();
  const std::pair<double, double> Inputs[] = {
      {NaN, 2.0}, {-0.0, 0.0}, {1.5, -0.0}, {Inf, Inf},
      {0.0, 0.0}, {-7.5, 2.0}, {2.0, NaN},  {-Inf, 3.0}};
  auto Ref = VirtualMachine::create(program());
  for (const jittest::TestMode &M : jittest::everyMode()) {
    // Where no LLVM code runs, a NaN's bits are the interpreter's too; neg,
    // min and max (results 5..7) pass a NaN on as the interpreter does.
    const bool NoTier2 =
        M.Mode == ExecMode::Bytecode || M.Mode == ExecMode::Baseline;
    auto VM = jittest::vmInMode(program(), M);
    for (int Round = 0; Round < 2; ++Round) // tiered: tier 2 the second
      for (auto [X, Y] : Inputs) {
        const std::vector<uint64_t> Want = bitsOf(*Ref, X, Y);
        const std::vector<uint64_t> Got = bitsOf(*VM, X, Y);
        ASSERT_EQ(Got.size(), Want.size());
        for (size_t I = 0; I < Want.size(); ++I) {
          const std::string Where = fmt::format("{} result {} of ({}, {})",
                                                jittest::modeName(M), I, X, Y);
          if (isNaNBits(Want[I]) && !NoTier2 && I < 5) {
            EXPECT_TRUE(isNaNBits(Got[I])) << Where;
          } else {
            EXPECT_EQ(Got[I], Want[I]) << Where;
          }
        }
      }
  }
}

} // namespace
