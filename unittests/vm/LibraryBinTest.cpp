// Tests the module blob of exported libraries (program.h's loadLibraryBin):
// the layout TVM's export_library embeds as `__tvm_ffi__library_bin` loads
// its relax.VMExecutable; every truncation and every single-byte change of
// a blob is a FormatError (or a valid program), never a crash; malformed
// import trees and module lists name the offset and the field.
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/program.h"

#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

void putU64(std::string &S, uint64_t V) {
  char B[8];
  std::memcpy(B, &V, 8);
  S.append(B, 8);
}
void putStr(std::string &S, std::string_view V) {
  putU64(S, V.size());
  S.append(V);
}

std::string tvmExec() {
  auto Exe = assemble(".func main(x)\n  %y = call scalar.add(%x, 1)\n"
                      "  ret %y\n.end\n",
                      "blob.vmasm");
  return serializeTvmExecutable(*Exe);
}

/// A blob: row pointers, child indices, then (kind, bytes) per module
/// ("_lib" has no bytes).
std::string blob(std::vector<uint64_t> RowPtr, std::vector<uint64_t> Children,
                 std::vector<std::pair<std::string, std::string>> Modules) {
  std::string Body;
  putU64(Body, RowPtr.size());
  for (uint64_t V : RowPtr)
    putU64(Body, V);
  putU64(Body, Children.size());
  for (uint64_t V : Children)
    putU64(Body, V);
  for (const auto &[Kind, Bytes] : Modules) {
    putStr(Body, Kind);
    if (Kind != "_lib")
      putStr(Body, Bytes);
  }
  std::string Out;
  putU64(Out, Body.size());
  return Out + Body;
}

std::string goodBlob() {
  return blob({0, 1, 1}, {1}, {{"relax.VMExecutable", tvmExec()}, {"_lib", ""}});
}

std::string errorOf(const std::string &B) {
  try {
    loadLibraryBin(B, "model.so");
    return "no error";
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
}

} // namespace

TEST(LibraryBinTest, LoadsTheVMExecutable) {
  auto Exe = loadLibraryBin(goodBlob(), "model.so");
  EXPECT_EQ(Exe->function(0).Name, "main");
  // The library as module 0, the executable importing nothing: also fine.
  EXPECT_NO_THROW(loadLibraryBin(
      blob({0, 1, 1}, {1}, {{"_lib", ""}, {"relax.VMExecutable", tvmExec()}}),
      "model.so"));
}

TEST(LibraryBinTest, MalformedBlobsNameOffsetAndField) {
  EXPECT_THAT(errorOf(blob({0, 0}, {}, {{"_lib", ""}})),
              HasSubstr("no 'relax.VMExecutable' module"));
  EXPECT_THAT(errorOf(blob({0, 1, 1}, {1},
                           {{"cuda", "x"}, {"relax.VMExecutable", tvmExec()}})),
              HasSubstr("module 0 is of kind 'cuda'"));
  EXPECT_THAT(errorOf(blob({0, 1, 1}, {7}, {{"_lib", ""}, {"_lib", ""}})),
              HasSubstr("the import tree names module 7, of 2"));
  EXPECT_THAT(errorOf(blob({0, 2, 1}, {1}, {{"_lib", ""}, {"_lib", ""}})),
              HasSubstr("not a valid CSR index"));
  EXPECT_THAT(errorOf(blob({}, {}, {})), HasSubstr("no modules"));
  std::string Two = blob({0, 0, 0}, {},
                         {{"relax.VMExecutable", tvmExec()},
                          {"relax.VMExecutable", tvmExec()}});
  EXPECT_THAT(errorOf(Two), HasSubstr("a second 'relax.VMExecutable'"));
  // A size past the symbol, and a row-pointer count no blob can hold.
  std::string Big = goodBlob();
  uint64_t Huge = UINT64_MAX;
  std::memcpy(Big.data(), &Huge, 8);
  EXPECT_THAT(errorOf(Big), HasSubstr("FormatError: model.so: library blob "
                                      "offset 0: blob size"));
  std::string Count = goodBlob();
  std::memcpy(Count.data() + 8, &Huge, 8);
  EXPECT_THAT(errorOf(Count),
              HasSubstr("offset 8: import tree row pointers runs past the end"));
}

TEST(LibraryBinTest, EveryTruncationIsAFormatError) {
  std::string B = goodBlob();
  for (size_t N = 0; N < B.size(); ++N) {
    std::string T = B.substr(0, N);
    std::string E = errorOf(T);
    EXPECT_THAT(E, HasSubstr("FormatError")) << "truncated to " << N;
  }
}

TEST(LibraryBinTest, EverySingleByteChangeIsCleanOrLoads) {
  std::string B = goodBlob();
  for (size_t I = 0; I < B.size(); ++I)
    for (unsigned char X : {0x01, 0x80, 0xff}) {
      std::string C = B;
      C[I] = static_cast<char>(C[I] ^ X);
      std::string E = errorOf(C);
      if (E != "no error") {
        EXPECT_TRUE(E.starts_with("FormatError") ||
                    E.starts_with("VerifyError"))
            << "byte " << I << ": " << E;
      }
    }
}
