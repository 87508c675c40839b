// Tests reading and writing NumPy .npy files.
#include "vmjit/files/npy.h"
#include "vmjit/runtime/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace vmjit;
using namespace vmjit::vm;
using ::testing::HasSubstr;

namespace {

std::string npyImage(const std::string &Dict, const std::string &Data,
                     char Major = 1) {
  std::string Header = Dict;
  size_t Prefix = Major == 1 ? 10 : 12;
  while ((Prefix + Header.size() + 1) % 64)
    Header += ' ';
  Header += '\n';
  std::string S = std::string("\x93NUMPY", 6) + Major + '\0';
  uint32_t L = static_cast<uint32_t>(Header.size());
  S.append(reinterpret_cast<const char *>(&L), Major == 1 ? 2 : 4);
  return S + Header + Data;
}

std::string parseError(const std::string &Image) {
  try {
    parseNpy(Image, "x.npy");
  } catch (const Error &E) {
    return E.kind() + ": " + E.message();
  }
  return "ok";
}

} // namespace

TEST(NpyTest, ReadsWhatNumPyWrites) {
  float Values[] = {1, 2, 3, 4, 5, 6};
  std::string Data(reinterpret_cast<const char *>(Values), sizeof(Values));
  Tensor T = parseNpy(
      npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
               Data),
      "x.npy");
  EXPECT_EQ(T.dtype(), dtype::Float32);
  ASSERT_EQ(T.ndim(), 2);
  EXPECT_EQ(T.shape()[1], 3);
  EXPECT_EQ(T.data<float>()[5], 6.0f);
  // Version 2.0, a 1-tuple, a scalar.
  int64_t One = 7;
  Tensor V = parseNpy(npyImage("{'descr': '<i8', 'fortran_order': False, "
                               "'shape': (1,), }",
                               std::string(reinterpret_cast<char *>(&One), 8),
                               2),
                      "x.npy");
  EXPECT_EQ(V.shape()[0], 1);
  EXPECT_EQ(V.data<int64_t>()[0], 7);
  Tensor S = parseNpy(npyImage("{'descr': '|b1', 'fortran_order': False, "
                               "'shape': (), }",
                               std::string(1, '\1')),
                      "x.npy");
  EXPECT_EQ(S.ndim(), 0);
  EXPECT_EQ(S.dtype(), dtype::Bool);
}

TEST(NpyTest, WriteThenReadRoundTrips) {
  for (DLDataType T : {dtype::Float32, dtype::Float64, dtype::Int8,
                       dtype::Int32, dtype::Int64, dtype::UInt8, dtype::Bool,
                       dtype::Float16}) {
    Tensor X = Tensor::empty({3, 1, 2}, T);
    for (size_t I = 0; I < X.nbytes(); ++I)
      static_cast<char *>(X.data())[I] = static_cast<char>(I % 2);
    std::string Image = serializeNpy(X);
    EXPECT_EQ((Image.size() - X.nbytes()) % 64, 0u);
    Tensor Y = parseNpy(Image, "y.npy");
    EXPECT_EQ(Y.dtype(), T);
    ASSERT_EQ(Y.ndim(), 3);
    EXPECT_EQ(Y.shape()[0], 3);
    EXPECT_EQ(std::string(static_cast<char *>(Y.data()), Y.nbytes()),
              std::string(static_cast<char *>(X.data()), X.nbytes()));
  }
  Tensor Scalar = Tensor::empty({}, dtype::Float32);
  Scalar.data<float>()[0] = 2.5f;
  EXPECT_EQ(parseNpy(serializeNpy(Scalar), "s.npy").data<float>()[0], 2.5f);
}

TEST(NpyTest, RejectsWhatItCannotRead) {
  std::string Dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_EQ(parseError("hello"),
            "FormatError: x.npy: not a readable .npy file: bad magic");
  EXPECT_THAT(parseError(npyImage(Dict, std::string(4, '\0'))),
              HasSubstr("shape [2] of float32 needs 8 data bytes, the file "
                        "has 4"));
  EXPECT_THAT(parseError(npyImage("{'descr': '<f4', 'fortran_order': True, "
                                  "'shape': (2,), }",
                                  std::string(8, '\0'))),
              HasSubstr("Fortran-order arrays are not supported"));
  EXPECT_THAT(parseError(npyImage("{'descr': '>f4', 'fortran_order': False, "
                                  "'shape': (2,), }",
                                  std::string(8, '\0'))),
              HasSubstr("big-endian dtype '>f4' is not supported"));
  EXPECT_THAT(parseError(npyImage("{'descr': '<c8', 'fortran_order': False, "
                                  "'shape': (2,), }",
                                  std::string(16, '\0'))),
              HasSubstr("unsupported dtype '<c8'"));
  EXPECT_THAT(parseError(npyImage("{'descr': '<f4', 'shape': (2,), }",
                                  std::string(8, '\0'))),
              HasSubstr("lacks"));
  EXPECT_THAT(parseError(npyImage("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (99999999999999999999,), }",
                                  "")),
              HasSubstr("dimension too large"));
  std::string Image = npyImage(Dict, std::string(8, '\0'));
  for (size_t Len = 0; Len < Image.size(); ++Len)
    ASSERT_THAT(parseError(Image.substr(0, Len)), HasSubstr("FormatError"))
        << "length " << Len;
  try {
    readNpy("/nonexistent/w.npy");
    FAIL();
  } catch (const Error &E) {
    EXPECT_EQ(E.kind(), "IOError");
  }
}

TEST(NpyTest, DescrsOfEveryDTypeAndWidth) {
  // Every descr of the dtype table reads as its dtype, in each byte order
  // spelling a little-endian host writes.
  const std::pair<const char *, DLDataType> Rows[] = {
      {"|b1", dtype::Bool},    {"|i1", dtype::Int8},    {"<i2", dtype::Int16},
      {"=i4", dtype::Int32},   {"<i8", dtype::Int64},   {"|u1", dtype::UInt8},
      {"<u2", dtype::UInt16},  {"<u4", dtype::UInt32},  {"|u8", dtype::UInt64},
      {"<f2", dtype::Float16}, {"<f4", dtype::Float32}, {"<f8", dtype::Float64},
      {">i1", dtype::Int8}};
  for (auto [Descr, Type] : Rows) {
    const std::string Dict = std::string("{'descr': '") + Descr +
                             "', 'fortran_order': False, 'shape': (0,), }";
    EXPECT_EQ(parseNpy(npyImage(Dict, ""), "x.npy").dtype(), Type) << Descr;
  }
  // The other byte widths of int, uint and float load and save too (NumPy's
  // long double is float128); bool has one width, bfloat16 no descr.
  Tensor Wide = parseNpy(npyImage("{'descr': '<f16', 'fortran_order': False, "
                                  "'shape': (1,), }",
                                  std::string(16, '\0')),
                         "x.npy");
  EXPECT_EQ(dtypeName(Wide.dtype()), "float128");
  std::string Image = serializeNpy(Tensor::empty({2}, dtype::make(kDLInt, 24)));
  EXPECT_THAT(Image, HasSubstr("'descr': '<i3'"));
  EXPECT_EQ(parseNpy(Image, "x.npy").dtype(), dtype::make(kDLInt, 24));
  EXPECT_THAT(parseError(npyImage("{'descr': '<b2', 'fortran_order': False, "
                                  "'shape': (0,), }",
                                  "")),
              HasSubstr("unsupported dtype '<b2'"));
  EXPECT_THROW(serializeNpy(Tensor::empty({1}, dtype::BFloat16)), Error);
}
