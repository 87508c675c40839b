//===- LibraryTest.cpp - Loading and calling a C kernel library -----------===//

#include "vmjit/runtime/library.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <unistd.h>

using namespace vmjit;

namespace {

#ifdef VMJIT_DEMO_KERNELS_PATH
const char *const DemoPath = VMJIT_DEMO_KERNELS_PATH;
#else
const char *const DemoPath = nullptr;
#endif

/// Whether the demo library is mapped in this process right now.
bool isMapped(const char *Path) {
  void *H = ::dlopen(Path, RTLD_NOW | RTLD_NOLOAD);
  if (H)
    ::dlclose(H);
  return H != nullptr;
}

class LibraryTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!DemoPath)
      GTEST_SKIP() << "built without the demo kernel library";
    Lib = KernelLibrary::load(DemoPath);
  }
  /// The library's function NAME; a missing one throws when called.
  Function get(std::string_view Name) {
    if (std::optional<Function> F = Lib->find(Name))
      return *F;
    std::string Missing(Name);
    return Function::fromPacked(Missing, [Missing](PackedArgs, Any *) {
      throwError("TestError", "no function " + Missing + " in the library");
    });
  }
  std::shared_ptr<KernelLibrary> Lib;
};

TEST_F(LibraryTest, FunctionNames) {
  EXPECT_EQ(Lib->path(), DemoPath);
  EXPECT_EQ(Lib->functionNames(),
            (std::vector<std::string>{"demo_add_int", "demo_count", "demo_fail",
                                      "demo_identity", "demo_negate",
                                      "demo_sum_f32"}));
}

TEST_F(LibraryTest, AddInt) {
  Function Add = get("demo_add_int");
  EXPECT_EQ(Add.name(), "demo_add_int");
  EXPECT_TRUE(Add.get()->isFreeEntry());
  EXPECT_EQ(Add(2, 40).cast<int64_t>(), 42);
  EXPECT_EQ(Lib->findEntry("demo_add_int"), Add.get()->entry());
}

TEST_F(LibraryTest, TvmFfiPrefix) {
  Function Neg = get("demo_negate");
  EXPECT_EQ(Neg(9).cast<int64_t>(), -9);
  EXPECT_NE(Lib->findEntry("demo_negate"), nullptr);
}

TEST_F(LibraryTest, SumOfTensor) {
  Tensor T = Tensor::empty({2, 2}, dtype::Float32);
  const float Values[] = {1.5f, 2.5f, 3.0f, -1.0f};
  std::copy(std::begin(Values), std::end(Values), T.data<float>());
  EXPECT_DOUBLE_EQ(get("demo_sum_f32")(T).cast<double>(), 6.0);
  EXPECT_EQ(T.useCount(), 1u);
}

TEST_F(LibraryTest, IdentityBalancesReferences) {
  String S(std::string(32, 's'));
  {
    Any R = get("demo_identity")(S);
    EXPECT_EQ(R.typeIndex(), kVMJITStr);
    EXPECT_TRUE(R.cast<String>().same(S));
    EXPECT_EQ(S.useCount(), 2u);
  }
  EXPECT_EQ(S.useCount(), 1u);
}

TEST_F(LibraryTest, ErrorMessageSurvives) {
  try {
    get("demo_fail")(7);
    FAIL() << "demo_fail did not fail";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "ValueError");
    EXPECT_EQ(E.message(), "demo_fail: kernel failed with code 7");
  }
}

TEST_F(LibraryTest, KernelTypeErrors) {
  try {
    get("demo_add_int")(1, 2.0);
    FAIL() << "no error";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "TypeError");
    EXPECT_EQ(E.message(), "demo_add_int: arguments must be int");
  }
}

TEST_F(LibraryTest, FunctionKeepsLibraryLoaded) {
  Function Add = get("demo_add_int");
  Lib.reset();
  ASSERT_TRUE(isMapped(DemoPath));
  EXPECT_EQ(Add(1, 1).cast<int64_t>(), 2);
  Add = Function();
  EXPECT_FALSE(isMapped(DemoPath));
}

TEST_F(LibraryTest, MissingFunction) {
  EXPECT_FALSE(Lib->find("missing").has_value());
  EXPECT_FALSE(Lib->find("helper_not_a_kernel").has_value());
  EXPECT_FALSE(Lib->find("demo_helper_not_a_kernel").has_value());
  EXPECT_EQ(Lib->findEntry("missing"), nullptr);
}

TEST(LibraryLoadTest, NonexistentPath) {
  const std::string Path = "/nonexistent/libx.so";
  try {
    KernelLibrary::load(Path);
    FAIL() << "loading a missing file did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "LibraryError");
    EXPECT_NE(E.message().find(Path), std::string::npos) << E.message();
  }
}

TEST(LibraryLoadTest, NotASharedObject) {
  std::string Path = ::testing::TempDir() + "vmjit_not_a_library_" +
                     std::to_string(::getpid()) + ".so";
  std::ofstream(Path) << "this is a text file, not an ELF shared object\n";
  try {
    KernelLibrary::load(Path);
    ADD_FAILURE() << "loading a text file did not throw";
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "LibraryError");
    EXPECT_NE(E.message().find(Path), std::string::npos) << E.message();
  }
  std::remove(Path.c_str());
}

} // namespace
