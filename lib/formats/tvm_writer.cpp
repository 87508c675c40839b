//===- tvm_writer.cpp - Writing Apache TVM's VMExecutable format -----------===//
//
// Byte for byte what TVM's VMExecutable::SaveToBytes writes for the same
// program: header, function table, an empty memory-scope section,
// constants (tvm-ffi type index + payload), instruction offsets and words.
// Checked by re-saving every TVM-written fixture to identical bytes
// (unittests/vm/TvmFormatTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "vmjit/files/file_io.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>

namespace vmjit::vm {
namespace {

class TvmWriter {
public:
  template <typename T> void put(T V) {
    static_assert(std::is_trivially_copyable_v<T>);
    Buf.append(reinterpret_cast<const char *>(&V), sizeof(T));
  }
  /// TVM's string: u64 length, then the bytes.
  void putStr(std::string_view S) {
    put<uint64_t>(S.size());
    Buf.append(S);
  }
  void putBytes(const void *P, size_t N) {
    Buf.append(static_cast<const char *>(P), N);
  }
  void putDType(DLDataType T) {
    put<uint8_t>(T.code);
    put<uint8_t>(T.bits);
    put<uint16_t>(T.lanes);
  }

  void writeFunctions(const Executable &Exe);
  void writeConstants(const Executable &Exe);
  void writeTensor(const Tensor &T, size_t Index, const std::string *Kept);
  void writeCode(const Executable &Exe);

  std::string Buf;
};

int32_t tvmKind(FunctionKind K) {
  switch (K) {
  case FunctionKind::Packed:
    return tvmfmt::kPackedFunc;
  case FunctionKind::Bytecode:
    return tvmfmt::kVMFunc;
  case FunctionKind::Native:
    return tvmfmt::kVMTIRFunc;
  }
  throwError("ValueError", fmt::format("unknown function kind {}",
                                       static_cast<int>(K)));
}

void TvmWriter::writeFunctions(const Executable &Exe) {
  put<uint64_t>(Exe.functions().size());
  for (const FunctionInfo &F : Exe.functions()) {
    put<int32_t>(tvmKind(F.Kind));
    putStr(F.Name);
    put<int64_t>(F.StartInstr);
    put<int64_t>(F.EndInstr);
    put<int64_t>(F.NumParams);
    put<int64_t>(F.RegisterFileSize);
    put<uint64_t>(F.ParamNames.size());
    for (const std::string &P : F.ParamNames)
      putStr(P);
  }
}

void TvmWriter::writeTensor(const Tensor &T, size_t Index,
                            const std::string *Kept) {
  if (T.device().device_type != kDLCPU || !T.isContiguous())
    throwError("ValueError",
               fmt::format("constant {}: only compact CPU tensors can be "
                           "written in TVM's format",
                           Index));
  if (!isTensorElementDType(T.dtype()))
    throwError("ValueError",
               fmt::format("constant {} is a {} tensor, which TVM's format "
                           "cannot hold",
                           Index, dtypeName(T.dtype())));
  const uint64_t Saved =
      tvmSavedBytes(static_cast<uint64_t>(T.numel()), T.dtype());
  const char *Data = static_cast<const char *>(T.data());
  if (Saved < T.nbytes() && std::any_of(Data + Saved, Data + T.nbytes(),
                                        [](char C) { return C != 0; }))
    throwError("ValueError",
               fmt::format("constant {} is a {} tensor of {} bytes, of which "
                           "TVM's format keeps the first {} (TVM's writer "
                           "does not count the lanes), and the others are "
                           "not all zero",
                           Index, dtypeName(T.dtype()), T.nbytes(), Saved));
  put<int32_t>(tvmfmt::kTensor);
  put<uint64_t>(tvmfmt::kTensorMagic);
  put<uint64_t>(0); // reserved
  put<int32_t>(kDLCPU);
  put<int32_t>(0); // device id
  put<int32_t>(static_cast<int32_t>(T.ndim()));
  putDType(T.dtype());
  for (int64_t D : T.shape())
    put<int64_t>(D);
  // As TVM's SaveDLTensor: Elems * ((bits + 7) / 8) bytes whatever the
  // type. For a packed sub-byte tensor that is more than its data: the
  // bytes after it are those the TVM file it came from had there, else
  // zeros. For a vector tensor it is less: the first part of its data (the
  // rest zeros, checked above, as in a tensor loaded from TVM's format).
  const uint64_t Written = std::min<uint64_t>(Saved, T.nbytes());
  put<int64_t>(static_cast<int64_t>(Saved));
  putBytes(Data, static_cast<size_t>(Written));
  if (Saved > Written) {
    const size_t Tail = static_cast<size_t>(Saved - Written);
    if (Kept && Kept->size() == Tail)
      Buf.append(*Kept);
    else
      Buf.append(Tail, '\0');
  }
}

void TvmWriter::writeConstants(const Executable &Exe) {
  put<uint64_t>(Exe.constants().size());
  for (size_t I = 0; I < Exe.constants().size(); ++I) {
    const Any &C = Exe.constants()[I];
    const VMJITAny &R = C.raw();
    switch (C.typeIndex()) {
    case kVMJITInt:
      put<int32_t>(tvmfmt::kInt);
      put<int64_t>(R.v_int64);
      break;
    case kVMJITFloat:
      put<int32_t>(tvmfmt::kFloat);
      put<double>(R.v_float64);
      break;
    case kVMJITDataType:
      put<int32_t>(tvmfmt::kDataType);
      putDType(R.v_dtype);
      break;
    case kVMJITSmallStr:
    case kVMJITStr:
      put<int32_t>(tvmfmt::kString);
      putStr(*C.as<std::string>());
      break;
    case kVMJITShape: {
      Shape S = *C.as<Shape>();
      put<int32_t>(tvmfmt::kShape);
      put<uint64_t>(S.size());
      for (int64_t D : S)
        put<int64_t>(D);
      break;
    }
    case kVMJITTensor:
      writeTensor(*C.as<Tensor>(), I, Exe.tvmTensorTail(I));
      break;
    case kVMJITNone:
      throwError("ValueError",
                 fmt::format("constant {} is null, which TVM's format cannot "
                             "hold (TVM's own writer crashes on a null "
                             "constant)",
                             I));
    case kVMJITBool:
      throwError("ValueError",
                 fmt::format("constant {} is a bool, which TVM's format cannot "
                             "hold (TVM's own writer fails with \"Unsupported "
                             "constant pool type bool\"); an int 0 or 1 does "
                             "the same job as a condition",
                             I));
    default:
      throwError("ValueError",
                 fmt::format("constant {} is a {}, which TVM's format cannot "
                             "hold",
                             I, C.typeName()));
    }
  }
}

void TvmWriter::writeCode(const Executable &Exe) {
  put<uint64_t>(Exe.instrOffsets().size());
  putBytes(Exe.instrOffsets().data(), Exe.instrOffsets().size() * 8);
  put<uint64_t>(Exe.code().size());
  putBytes(Exe.code().data(), Exe.code().size() * sizeof(Word));
}

} // namespace

std::string serializeTvmExecutable(const Executable &Exe) {
  TvmWriter W;
  W.put<uint64_t>(tvmfmt::kMagic);
  W.putStr(tvmfmt::kVersion);
  W.writeFunctions(Exe);
  W.put<uint64_t>(0); // memory scopes: none (vmjit has no per-constant scope)
  W.writeConstants(Exe);
  W.writeCode(Exe);
  return std::move(W.Buf);
}

void saveTvmExecutable(const Executable &Exe, const std::string &Path) {
  writeWholeFile(Path, serializeTvmExecutable(Exe));
}

} // namespace vmjit::vm
