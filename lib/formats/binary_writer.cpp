//===- binary_writer.cpp - Writing the binary executable format ------------===//

#include "binary_format.h"
#include "vmjit/files/file_io.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"

#include <cstdio>
#include <cstring>
#include <vector>
#include <fmt/format.h>
#include <xxhash.h>
#ifdef VMJIT_HAVE_XXH3_DISPATCH
// Runtime-dispatched XXH3 (AVX2/AVX-512 where the CPU has them; Debian's
// default entry is SSE2 only), same hash values: this header redefines
// XXH3_64bits as XXH3_64bits_dispatch. 1 GiB verifies in ~91 ms, not ~126.
#include <xxh_x86dispatch.h>
#endif

namespace vmjit::vm {
namespace {

class ByteWriter {
public:
  template <typename T> void put(T V) {
    static_assert(std::is_trivially_copyable_v<T>);
    Buf.append(reinterpret_cast<const char *>(&V), sizeof(T));
  }
  void putString(std::string_view S) {
    put<uint32_t>(static_cast<uint32_t>(S.size()));
    Buf.append(S);
  }
  void putBytes(const void *P, size_t N) {
    Buf.append(static_cast<const char *>(P), N);
  }
  void padTo(uint64_t Align) {
    Buf.resize((Buf.size() + Align - 1) / Align * Align, '\0');
  }
  std::string &buffer() { return Buf; }

private:
  std::string Buf;
};

std::string writeFunctions(const Executable &Exe) {
  ByteWriter W;
  W.put<uint64_t>(Exe.functions().size());
  for (const FunctionInfo &F : Exe.functions()) {
    W.put<uint8_t>(static_cast<uint8_t>(F.Kind));
    W.putString(F.Name);
    W.put<int64_t>(F.StartInstr);
    W.put<int64_t>(F.EndInstr);
    W.put<int64_t>(F.NumParams);
    W.put<int64_t>(F.RegisterFileSize);
    W.put<uint32_t>(static_cast<uint32_t>(F.ParamNames.size()));
    for (const std::string &P : F.ParamNames)
      W.putString(P);
  }
  return std::move(W.buffer());
}

/// Writes the constant pool; tensor bytes go to `Data` at 64-byte aligned
/// offsets.
std::string writeConstants(const Executable &Exe, ByteWriter &Data) {
  using namespace binfmt;
  ByteWriter W;
  W.put<uint64_t>(Exe.constants().size());
  for (size_t I = 0; I < Exe.constants().size(); ++I) {
    const Any &C = Exe.constants()[I];
    const VMJITAny &R = C.raw();
    switch (C.typeIndex()) {
    case kVMJITNone:
      W.put<uint8_t>(kConstNull);
      break;
    case kVMJITInt:
      W.put<uint8_t>(kConstInt);
      W.put<int64_t>(R.v_int64);
      break;
    case kVMJITFloat:
      W.put<uint8_t>(kConstFloat);
      W.put<double>(R.v_float64);
      break;
    case kVMJITBool:
      W.put<uint8_t>(kConstBool);
      W.put<uint8_t>(R.v_int64 != 0);
      break;
    case kVMJITSmallStr:
    case kVMJITStr:
      W.put<uint8_t>(kConstString);
      W.putString(*C.as<std::string>());
      break;
    case kVMJITDataType:
      W.put<uint8_t>(kConstDType);
      W.put<uint8_t>(R.v_dtype.code);
      W.put<uint8_t>(R.v_dtype.bits);
      W.put<uint16_t>(R.v_dtype.lanes);
      break;
    case kVMJITShape: {
      Shape S = *C.as<Shape>();
      W.put<uint8_t>(kConstShape);
      W.put<uint32_t>(static_cast<uint32_t>(S.size()));
      for (int64_t D : S)
        W.put<int64_t>(D);
      break;
    }
    case kVMJITTensor: {
      Tensor T = *C.as<Tensor>();
      if (T.device().device_type != kDLCPU || !T.isContiguous())
        throwError("ValueError",
                   fmt::format("constant {}: only compact CPU tensors can be "
                               "saved",
                               I));
      W.put<uint8_t>(kConstTensor);
      W.put<uint8_t>(T.dtype().code);
      W.put<uint8_t>(T.dtype().bits);
      W.put<uint16_t>(T.dtype().lanes);
      W.put<uint32_t>(static_cast<uint32_t>(T.ndim()));
      for (int64_t D : T.shape())
        W.put<int64_t>(D);
      Data.padTo(kAlign);
      W.put<uint64_t>(Data.buffer().size());
      W.put<uint64_t>(T.nbytes());
      Data.putBytes(T.data(), T.nbytes());
      break;
    }
    default:
      throwError("ValueError",
                 fmt::format("constant {} is a {}, which the binary format "
                             "cannot hold",
                             I, C.typeName()));
    }
  }
  return std::move(W.buffer());
}

std::string writeCode(const Executable &Exe) {
  ByteWriter W;
  W.put<uint64_t>(Exe.code().size());
  W.putBytes(Exe.code().data(), Exe.code().size() * sizeof(Word));
  return std::move(W.buffer());
}

/// The NAME section: u64 count, then per function with names its u64
/// index, u64 n + n x (u32 register, name), u64 m + m x (u32 instruction,
/// name). Empty when no function has names (the section is left out).
std::string writeNames(const Executable &Exe) {
  ByteWriter W;
  uint64_t Count = 0;
  for (size_t I = 0; I < Exe.functions().size(); ++I)
    Count += Exe.debugNames(static_cast<int64_t>(I)) != nullptr;
  if (Count == 0)
    return {};
  W.put<uint64_t>(Count);
  for (size_t I = 0; I < Exe.functions().size(); ++I) {
    const DebugNames *N = Exe.debugNames(static_cast<int64_t>(I));
    if (!N)
      continue;
    W.put<uint64_t>(I);
    for (const auto *List : {&N->Registers, &N->Labels}) {
      W.put<uint64_t>(List->size());
      for (const auto &[Index, Name] : *List) {
        W.put<uint32_t>(static_cast<uint32_t>(Index));
        W.putString(Name);
      }
    }
  }
  return std::move(W.buffer());
}

/// The CNAM section: u64 count (the number of constants), then a name per
/// constant ("" for one without). Empty when no constant has a name.
std::string writeConstNames(const Executable &Exe) {
  const size_t N = Exe.constants().size();
  bool Any = false;
  for (size_t I = 0; I < N && !Any; ++I)
    Any = Exe.constantName(I) != nullptr;
  if (!Any)
    return {};
  ByteWriter W;
  W.put<uint64_t>(N);
  for (size_t I = 0; I < N; ++I) {
    const std::string *Name = Exe.constantName(I);
    W.putString(Name ? *Name : std::string());
  }
  return std::move(W.buffer());
}

/// The LINE section: the file name, u64 count (the number of
/// instructions), then per instruction u32 line and u32 column. Empty when
/// the program has no source positions.
std::string writeSourceMap(const Executable &Exe) {
  const SourceMap *M = Exe.sourceMap();
  if (!M)
    return {};
  ByteWriter W;
  W.putString(M->File);
  W.put<uint64_t>(M->Instrs.size());
  for (const SourcePos &P : M->Instrs) {
    W.put<uint32_t>(P.Line);
    W.put<uint32_t>(P.Col);
  }
  return std::move(W.buffer());
}

} // namespace

std::string serializeExecutable(const Executable &Exe) {
  using namespace binfmt;
  ByteWriter Data;
  std::string Consts = writeConstants(Exe, Data);
  struct Section {
    uint32_t Kind;
    std::string Bytes;
  };
  std::vector<Section> Sections = {{kSectionFunctions, writeFunctions(Exe)},
                                   {kSectionConstants, std::move(Consts)},
                                   {kSectionCode, writeCode(Exe)},
                                   {kSectionData, std::move(Data.buffer())}};
  if (std::string Names = writeNames(Exe); !Names.empty())
    Sections.push_back({kSectionNames, std::move(Names)});
  if (std::string Names = writeConstNames(Exe); !Names.empty())
    Sections.push_back({kSectionConstNames, std::move(Names)});
  if (std::string Lines = writeSourceMap(Exe); !Lines.empty())
    Sections.push_back({kSectionSourceMap, std::move(Lines)});
  const auto NumSections = static_cast<uint32_t>(Sections.size());

  ByteWriter Table;
  uint64_t Offset = alignUp(kHeaderSize + NumSections * kSectionEntrySize);
  for (const Section &S : Sections) {
    Table.put<uint32_t>(S.Kind);
    Table.put<uint32_t>(0);
    Table.put<uint64_t>(Offset);
    Table.put<uint64_t>(S.Bytes.size());
    Table.put<uint64_t>(XXH3_64bits(S.Bytes.data(), S.Bytes.size()));
    Offset = alignUp(Offset + S.Bytes.size());
  }
  const uint64_t FileSize = Offset;

  ByteWriter Out;
  Out.putBytes(kMagic, sizeof(kMagic));
  Out.put<uint32_t>(kFormatVersion);
  Out.put<uint32_t>(NumSections);
  Out.put<uint64_t>(FileSize);
  Out.put<uint64_t>(0); // header checksum, filled in below
  Out.buffer().resize(kHeaderSize, '\0');
  Out.buffer() += Table.buffer();
  uint64_t Sum = XXH3_64bits(Out.buffer().data(), Out.buffer().size());
  std::memcpy(Out.buffer().data() + kHeaderChecksumOffset, &Sum, sizeof(Sum));
  for (const Section &S : Sections) {
    Out.padTo(kAlign);
    Out.buffer() += S.Bytes;
  }
  Out.padTo(kAlign);
  return std::move(Out.buffer());
}

void saveExecutable(const Executable &Exe, const std::string &Path) {
  writeWholeFile(Path, serializeExecutable(Exe));
}

} // namespace vmjit::vm
