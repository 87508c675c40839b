//===- KernelEffectsJsonTest.cpp - Kernel effects as JSON -----------------===//
//
// The text a `vmjit compile --kernels` library records of its kernels'
// effects: it reads back as written, and text it does not write is refused
// with a reason (the loader turns it into a FormatError naming the
// library).
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/kernel_effects_json.h"

#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

TEST(KernelEffectsJsonTest, ReadsBackWhatItWrites) {
  std::map<std::string, KernelEffects> Effects;
  Effects["transpose"] = {true, {ArgAccess::Read, ArgAccess::Write}};
  Effects["add"] = {true,
                    {ArgAccess::Read, ArgAccess::Read, ArgAccess::ReadWrite}};
  Effects["opaque"] = {false, {ArgAccess::ReadWrite, ArgAccess::None}};
  Effects["varargs"] = {false, {}};
  const std::string Text = kernelEffectsJson(Effects);
  std::string Why;
  auto Back = parseKernelEffectsJson(Text, Why);
  ASSERT_TRUE(Back) << Why;
  EXPECT_EQ(*Back, Effects);
  EXPECT_NE(Text.find("\"read_write\""), std::string::npos) << Text;
}

TEST(KernelEffectsJsonTest, NoKernelsIsAnEmptyObject) {
  std::string Why;
  auto Back = parseKernelEffectsJson(kernelEffectsJson({}), Why);
  ASSERT_TRUE(Back) << Why;
  EXPECT_TRUE(Back->empty());
}

TEST(KernelEffectsJsonTest, RefusesWhatItDoesNotWrite) {
  const std::pair<const char *, const char *> Cases[] = {
      {"not json", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {R"({"k": 1})", "kernel 'k'"},
      {R"({"k": {"args": []}})", "kernel 'k'"},
      {R"({"k": {"only_argument_memory": 1, "args": []}})", "kernel 'k'"},
      {R"({"k": {"only_argument_memory": true, "args": "read"}})",
       "kernel 'k'"},
      {R"({"k": {"only_argument_memory": true, "args": ["readonly"]}})",
       "unknown argument access"},
      {R"({"k": {"only_argument_memory": true, "args": [1]}})",
       "unknown argument access"},
  };
  for (const auto &[Text, Reason] : Cases) {
    SCOPED_TRACE(Text);
    std::string Why;
    EXPECT_FALSE(parseKernelEffectsJson(Text, Why));
    EXPECT_NE(Why.find(Reason), std::string::npos) << Why;
  }
}

} // namespace
