//===- disassembler.cpp - vmasm text of an executable ----------------------===//
//
// Constants first (each `.const $cN`), then the function table in order.
// Numbers are printed so that the assembler reads back the same bits.
//
//===----------------------------------------------------------------------===//

#include "vmjit/text/disassembler.h"
#include "vmjit/text/asm_lexer.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/text/literals.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace vmjit::vm {
namespace {

using OutIt = std::back_insert_iterator<std::string>;

/// Writes a non-finite value given its sign, whether it is a NaN, its
/// mantissa and the mantissa of the default quiet NaN.
void writeNonFinite(std::string &Out, bool Neg, bool IsNaN, uint64_t Mant,
                    uint64_t QuietMant) {
  if (Neg)
    Out += '-';
  if (!IsNaN)
    Out += "inf";
  else if (Mant == QuietMant)
    Out += "nan";
  else
    fmt::format_to(OutIt(Out), "nan({:#x})", Mant);
}

/// A finite float or double in its shortest round-trip form.
template <typename T> void writeFinite(std::string &Out, T V) {
  fmt::format_to(OutIt(Out), "{}", V);
}

void writeDouble(std::string &Out, double V, bool Scalar) {
  if (!std::isfinite(V)) {
    uint64_t Bits = std::bit_cast<uint64_t>(V);
    writeNonFinite(Out, std::signbit(V), std::isnan(V),
                   Bits & ((uint64_t(1) << 52) - 1), uint64_t(1) << 51);
    return;
  }
  size_t Start = Out.size();
  writeFinite(Out, V);
  // "1" reads back as the same double, but "1.0" says it is a float.
  if (Scalar && Out.find_first_not_of("-0123456789", Start) == std::string::npos)
    Out += ".0";
}

void writeFloat(std::string &Out, float V) {
  if (!std::isfinite(V)) {
    uint32_t Bits = std::bit_cast<uint32_t>(V);
    writeNonFinite(Out, std::signbit(V), std::isnan(V), Bits & 0x7fffff,
                   0x400000);
    return;
  }
  writeFinite(Out, V);
}

/// float16, bfloat16 (a format narrower than float32): non-finite values
/// by their bits; finite ones as the float32 they widen to exactly, which
/// reads back to the same value.
void writeNarrowFloat(std::string &Out, uint64_t Bits, const FloatFormat &F) {
  const uint64_t Mag = Bits & ~F.signBit();
  if (Mag >= F.expMask()) {
    const uint64_t Mant = Mag & ~F.expMask();
    writeNonFinite(Out, Bits & F.signBit(), Mant != 0, Mant,
                   uint64_t(1) << (F.MantBits - 1));
    return;
  }
  writeFinite(Out, narrowFloatValue(Bits, F));
}

void writeString(std::string &Out, std::string_view S) {
  Out += '"';
  for (char C : S) {
    auto U = static_cast<unsigned char>(C);
    switch (C) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\t':
      Out += "\\t";
      break;
    default:
      if (U >= 0x20 && U < 0x7f)
        Out += C;
      else
        fmt::format_to(OutIt(Out), "\\x{:02x}", U);
    }
  }
  Out += '"';
}

/// A function name: as it is if the lexer reads it back as one
/// identifier, else quoted (the assembler takes a string for any name), so
/// that no name is ever renamed.
void writeName(std::string &Out, std::string_view Name) {
  if (asmtext::isIdentifier(Name))
    Out += Name;
  else
    writeString(Out, Name);
}

/// A parameter list. A name is written quoted (a name only, naming no
/// register) where a bare one would not assemble or would mean something
/// else: not an identifier, `vm`, or a name that repeats in the list.
void writeParams(std::string &Out, const std::vector<std::string> &Params) {
  const std::vector<bool> Bare = asmtext::bareParams(Params);
  Out += '(';
  for (size_t P = 0; P < Params.size(); ++P) {
    if (P)
      Out += ", ";
    if (Bare[P])
      Out += Params[P];
    else
      writeString(Out, Params[P]);
  }
  Out += ')';
}

/// What vmasm cannot write: an empty function name (the assembler rejects
/// one), and a native function whose parameters and registers `.native
/// NAME(PARAMS) .regs N` cannot give back.
void checkWritable(const FunctionInfo &F, size_t Index) {
  if (F.Name.empty())
    throwError("ValueError",
               fmt::format("function table entry {} has an empty name, which "
                           "vmasm cannot write",
                           Index));
  if (F.Kind == FunctionKind::Native &&
      (F.NumParams != static_cast<int64_t>(F.ParamNames.size()) ||
       F.RegisterFileSize < F.NumParams))
    throwError("ValueError",
               fmt::format("native function '{}' has {} parameters, {} "
                           "parameter names and {} registers, which vmasm "
                           "cannot write",
                           F.Name, F.NumParams, F.ParamNames.size(),
                           F.RegisterFileSize));
}

void writeDims(std::string &Out, std::span<const int64_t> Dims) {
  Out += '[';
  for (size_t I = 0; I < Dims.size(); ++I)
    fmt::format_to(OutIt(Out), "{}{}", I ? ", " : "", Dims[I]);
  Out += ']';
}

/// One element of row `R`'s dtype at `P`, as the assembler reads it back.
void writeElement(std::string &Out, const char *P, const DTypeTraits &R) {
  const uint64_t Bits = loadElementBits(P, R);
  switch (R.Literal) {
  case LiteralKind::Bool:
    if (Bits <= 1)
      Out += Bits ? "true" : "false";
    else
      fmt::format_to(OutIt(Out), "{}", Bits);
    return;
  case LiteralKind::Signed: {
    const int Unused = 64 - R.Type.bits; // sign-extend from the top bit
    fmt::format_to(OutIt(Out), "{}",
                   static_cast<int64_t>(Bits << Unused) >> Unused);
    return;
  }
  case LiteralKind::Unsigned:
    fmt::format_to(OutIt(Out), "{}", Bits);
    return;
  case LiteralKind::Float:
    if (R.Float.sameLayout(kFloat64))
      writeDouble(Out, std::bit_cast<double>(Bits), /*Scalar=*/false);
    else if (R.Float.sameLayout(kFloat32))
      writeFloat(Out, std::bit_cast<float>(static_cast<uint32_t>(Bits)));
    else
      writeNarrowFloat(Out, Bits, R.Float);
    return;
  }
}

void writeTensor(std::string &Out, const Tensor &T, size_t Index) {
  if (T.device().device_type != kDLCPU)
    throwError("ValueError",
               fmt::format("constant {} is a tensor on a device other than "
                           "the CPU, which vmasm cannot write",
                           Index));
  DLDataType DT = T.dtype();
  if (!isVmasmTensorDType(DT) && isTensorElementDType(DT) &&
      T.isContiguous()) { // int4, float8_e4m3fn, float32x2, ...: the bytes
    fmt::format_to(OutIt(Out), "tensor {} ", dtypeName(DT));
    writeDims(Out, T.shape());
    fmt::format_to(OutIt(Out), " hex \"{}\"",
                   toHexDigits(T.data(), T.nbytes()));
    return;
  }
  if (!isVmasmTensorDType(DT))
    throwError("ValueError",
               fmt::format("constant {} is a {} tensor, which vmasm cannot "
                           "write",
                           Index, dtypeName(DT)));
  fmt::format_to(OutIt(Out), "tensor {} ", dtypeName(DT));
  std::span<const int64_t> Shape = T.shape();
  writeDims(Out, Shape);
  Out += " [";
  const int64_t N = T.numel();
  const DTypeTraits *Row = findDType(DT);
  const size_t Size = Row->bytes();
  const char *Base = static_cast<const char *>(T.data());
  const int64_t *Strides = T.dl()->strides;
  std::vector<int64_t> Coord(Shape.size(), 0);
  for (int64_t I = 0; I < N; ++I) {
    int64_t Offset = I;
    if (Strides) {
      Offset = 0;
      for (size_t D = 0; D < Shape.size(); ++D)
        Offset += Coord[D] * Strides[D];
      for (size_t D = Shape.size(); D-- > 0;) {
        if (++Coord[D] < Shape[D])
          break;
        Coord[D] = 0;
      }
    }
    if (I)
      Out += ", ";
    writeElement(Out, Base + Offset * static_cast<int64_t>(Size), *Row);
  }
  Out += ']';
}

void writeConstant(std::string &Out, const Any &C, size_t Index,
                   const DisassembleOptions &Opts) {
  const VMJITAny &R = C.raw();
  switch (C.typeIndex()) {
  case kVMJITNone:
    Out += "null";
    return;
  case kVMJITInt:
    fmt::format_to(OutIt(Out), "int {}", R.v_int64);
    return;
  case kVMJITBool:
    Out += R.v_int64 ? "bool true" : "bool false";
    return;
  case kVMJITFloat:
    Out += "float ";
    writeDouble(Out, R.v_float64, /*Scalar=*/true);
    return;
  case kVMJITSmallStr:
  case kVMJITStr:
    Out += "str ";
    writeString(Out, *C.as<std::string>());
    return;
  case kVMJITDataType: {
    // Only names that read back as the same type ("handle" is always
    // 64-bit, one lane; other codes have no name).
    std::string Name = dtypeName(R.v_dtype);
    auto Back = parseDType(Name);
    if (!Back || *Back != R.v_dtype)
      throwError("ValueError",
                 fmt::format("constant {}: the dtype (code {}, {} bits, {} "
                             "lanes) has no vmasm name",
                             Index, R.v_dtype.code, R.v_dtype.bits,
                             R.v_dtype.lanes));
    fmt::format_to(OutIt(Out), "dtype {}", Name);
    return;
  }
  case kVMJITShape:
    Out += "shape ";
    writeDims(Out, C.as<Shape>()->dims());
    return;
  case kVMJITTensor: {
    Tensor T = *C.as<Tensor>();
    if (Opts.SaveTensor && T.numel() >= Opts.NpyMinElements &&
        T.device().device_type == kDLCPU && isVmasmTensorDType(T.dtype())) {
      std::string Path = Opts.SaveTensor(Index, T);
      fmt::format_to(OutIt(Out), "tensor {} ", dtypeName(T.dtype()));
      writeDims(Out, T.shape());
      Out += " npy ";
      writeString(Out, Path);
      return;
    }
    writeTensor(Out, T, Index);
    return;
  }
  default:
    throwError("ValueError",
               fmt::format("constant {} is a {}, which vmasm cannot write",
                           Index, C.typeName()));
  }
}


void writeReg(std::string &Out, RegName R,
              const std::map<int64_t, std::string> *Names = nullptr) {
  if (R == kVMRegister || R == kVoidRegister) {
    Out += R == kVMRegister ? "%vm" : "%void";
    return;
  }
  if (Names)
    if (auto It = Names->find(R); It != Names->end()) {
      fmt::format_to(OutIt(Out), "%{}", It->second);
      return;
    }
  fmt::format_to(OutIt(Out), "%{}", R);
}

/// The register names to write for a function with debug names, or an
/// empty map when reassembly would number them differently: the assembler
/// gives a bare parameter name its parameter's number, and any other name,
/// the first time it sees it (destination, then arguments, in instruction
/// order), the lowest free number that no `%N` in the function takes.
std::map<int64_t, std::string> registerNames(const Executable &Exe,
                                             const FunctionInfo &F,
                                             const DebugNames &D) {
  std::map<int64_t, std::string> Names;
  std::set<int64_t> Numbered; // names the assembler numbers up front
  const std::vector<bool> Bare = asmtext::bareParams(F.ParamNames);
  const std::set<std::string_view> ParamSet(F.ParamNames.begin(),
                                            F.ParamNames.end());
  for (const auto &[R, N] : D.Registers) {
    if (R < F.NumParams) {
      if (static_cast<size_t>(R) >= F.ParamNames.size() ||
          N != F.ParamNames[static_cast<size_t>(R)] ||
          !Bare[static_cast<size_t>(R)])
        return {};
      Numbered.insert(R);
    } else if (ParamSet.count(N)) {
      return {};
    }
    Names.emplace(R, N);
  }
  std::vector<RegName> Refs;
  for (int64_t L = 0; L < F.numInstrs(); ++L) {
    InstrView I = Exe.instr(F.StartInstr + L);
    if (I.opcode() == Opcode::Call) {
      if (I.callDst() != kVoidRegister)
        Refs.push_back(I.callDst());
      for (int64_t A = 0; A < I.callNumArgs(); ++A)
        if (I.callArg(A).kindByte() == uint8_t(ArgKind::Register) &&
            !isSpecialRegister(I.callArg(A).value()))
          Refs.push_back(I.callArg(A).value());
    } else if (I.opcode() == Opcode::Ret && !isSpecialRegister(I.retReg())) {
      Refs.push_back(I.retReg());
    } else if (I.opcode() == Opcode::If && !isSpecialRegister(I.ifCond())) {
      Refs.push_back(I.ifCond());
    }
  }
  std::set<int64_t> Explicit;
  for (RegName R : Refs)
    if (!Names.count(R))
      Explicit.insert(R);
  int64_t NextFree = F.NumParams;
  for (RegName R : Refs) {
    if (!Names.count(R) || Numbered.count(R))
      continue;
    while (Explicit.count(NextFree))
      ++NextFree;
    if (NextFree++ != R)
      return {};
    Numbered.insert(R);
  }
  return Names;
}

/// The names `.const` lines give the constants: the ones the text gave
/// (Executable::constantName) and cN for the others, unless a given name
/// is another constant's cN; then cN for all, so that the text reassembles.
std::vector<std::string> constantNames(const Executable &Exe) {
  const size_t N = Exe.constants().size();
  std::vector<std::string> Names(N);
  std::unordered_set<std::string> Seen;
  bool Clash = false;
  for (size_t I = 0; I < N; ++I) {
    const std::string *Given = Exe.constantName(I);
    Names[I] = Given ? *Given : fmt::format("c{}", I);
    Clash |= !Seen.insert(Names[I]).second;
  }
  if (Clash)
    for (size_t I = 0; I < N; ++I)
      Names[I] = fmt::format("c{}", I);
  return Names;
}

class FunctionWriter {
public:
  FunctionWriter(const Executable &Exe, int64_t Index,
                 const std::vector<std::string> &ConstNames, std::string &Out)
      : Exe(Exe), F(Exe.function(Index)), ConstNames(ConstNames), Out(Out) {
    if (const DebugNames *D = Exe.debugNames(Index)) {
      Debug = D;
      if (F.StartInstr >= 0 && F.StartInstr <= F.EndInstr &&
          F.EndInstr <= Exe.numInstrs())
        RegNames = registerNames(Exe, F, *D);
    }
  }

  void write() {
    if (F.StartInstr < 0 || F.StartInstr > F.EndInstr ||
        F.EndInstr > Exe.numInstrs())
      throwError("ValueError",
                 fmt::format("function '{}' has instructions [{}, {}), "
                             "outside the executable's {}",
                             F.Name, F.StartInstr, F.EndInstr,
                             Exe.numInstrs()));
    const int64_t N = F.numInstrs();
    // Jump targets inside the function get labels, in position order.
    std::map<int64_t, int64_t> Labels;
    int64_t Used = F.NumParams;
    auto Use = [&](RegName R) {
      if (R >= 0 && !isSpecialRegister(R))
        Used = std::max(Used, R + 1);
    };
    for (int64_t L = 0; L < N; ++L) {
      InstrView I = instr(L);
      switch (I.opcode()) {
      case Opcode::Call:
        Use(I.callDst());
        for (int64_t A = 0; A < I.callNumArgs(); ++A)
          if (I.callArg(A).kindByte() == uint8_t(ArgKind::Register))
            Use(I.callArg(A).value());
        break;
      case Opcode::Ret:
        Use(I.retReg());
        break;
      case Opcode::Goto:
        addTarget(Labels, L, I.gotoOffset());
        break;
      case Opcode::If:
        Use(I.ifCond());
        addTarget(Labels, L, I.ifFalseOffset());
        break;
      }
    }
    // Labels the text gave keep their names (every one, jump target or
    // not); the other targets are numbered L0, L1, ... past those names.
    std::set<std::string> Given;
    if (Debug)
      for (const auto &[At, Name] : Debug->Labels)
        if (At < N && Given.insert(Name).second)
          Named.emplace(At, Name);
    int64_t Next = 0;
    for (auto &[Target, Number] : Labels) {
      if (Named.count(Target))
        continue;
      while (Given.count(fmt::format("L{}", Next)))
        ++Next;
      Number = Next++;
    }
    for (const auto &[At, Name] : Named)
      Labels.emplace(At, -1);

    Out += ".func ";
    writeName(Out, F.Name);
    writeParams(Out, F.ParamNames);
    Out += '\n';
    if (F.RegisterFileSize > Used)
      fmt::format_to(OutIt(Out), "  .regs {}\n", F.RegisterFileSize);
    for (int64_t L = 0; L < N; ++L) {
      if (auto It = Labels.find(L); It != Labels.end())
        Out += labelName(L, It->second) + ":\n";
      Out += "  ";
      writeInstr(L, Labels);
      Out += '\n';
    }
    Out += ".end\n";
  }

private:
  InstrView instr(int64_t L) const { return Exe.instr(F.StartInstr + L); }

  std::string labelName(int64_t At, int64_t Number) const {
    if (auto It = Named.find(At); It != Named.end())
      return It->second;
    return fmt::format("L{}", Number);
  }
  const std::map<int64_t, std::string> *regNames() const {
    return RegNames.empty() ? nullptr : &RegNames;
  }

  void addTarget(std::map<int64_t, int64_t> &Labels, int64_t L,
                 int64_t Offset) const {
    int64_t T = L + Offset;
    if (Offset >= -F.numInstrs() && Offset <= F.numInstrs() && T >= 0 &&
        T < F.numInstrs())
      Labels.emplace(T, 0);
  }

  void writeTarget(const std::map<int64_t, int64_t> &Labels, int64_t L,
                   int64_t Offset) {
    auto It = Offset >= -F.numInstrs() && Offset <= F.numInstrs()
                  ? Labels.find(L + Offset)
                  : Labels.end();
    if (It != Labels.end())
      Out += labelName(It->first, It->second);
    else
      fmt::format_to(OutIt(Out), "{:+}", Offset);
  }

  void writeFuncName(int64_t Index) {
    if (Index >= 0 && Index < static_cast<int64_t>(Exe.functions().size()))
      writeName(Out, Exe.function(Index).Name);
    else
      fmt::format_to(OutIt(Out), "<function {}>", Index);
  }

  void writeInstr(int64_t L, const std::map<int64_t, int64_t> &Labels) {
    InstrView I = instr(L);
    switch (I.opcode()) {
    case Opcode::Call: {
      if (I.callDst() != kVoidRegister) {
        writeReg(Out, I.callDst(), regNames());
        Out += " = ";
      }
      Out += "call ";
      writeFuncName(I.callFunc());
      Out += '(';
      for (int64_t A = 0; A < I.callNumArgs(); ++A) {
        if (A)
          Out += ", ";
        Arg X = I.callArg(A);
        switch (X.kindByte()) {
        case uint8_t(ArgKind::Register):
          writeReg(Out, X.value(), regNames());
          break;
        case uint8_t(ArgKind::Immediate):
          fmt::format_to(OutIt(Out), "{}", X.value());
          break;
        case uint8_t(ArgKind::ConstIdx):
          if (X.value() >= 0 &&
              X.value() < static_cast<int64_t>(Exe.constants().size()))
            fmt::format_to(OutIt(Out), "${}",
                           ConstNames[static_cast<size_t>(X.value())]);
          else
            fmt::format_to(OutIt(Out), "${}", X.value());
          break;
        case uint8_t(ArgKind::FuncIdx):
          Out += '@';
          writeFuncName(X.value());
          break;
        default:
          fmt::format_to(OutIt(Out), "<argument kind {}>", X.kindByte());
        }
      }
      Out += ')';
      return;
    }
    case Opcode::Ret:
      Out += "ret ";
      writeReg(Out, I.retReg(), regNames());
      return;
    case Opcode::Goto:
      Out += "goto ";
      writeTarget(Labels, L, I.gotoOffset());
      return;
    case Opcode::If:
      Out += "if ";
      writeReg(Out, I.ifCond(), regNames());
      Out += " else ";
      writeTarget(Labels, L, I.ifFalseOffset());
      return;
    }
    fmt::format_to(OutIt(Out), "<opcode {}>", static_cast<int64_t>(I.opcode()));
  }

  const Executable &Exe;
  const FunctionInfo &F;
  const std::vector<std::string> &ConstNames;
  std::string &Out;
  const DebugNames *Debug = nullptr;
  std::map<int64_t, std::string> RegNames; // empty: registers by number
  std::map<int64_t, std::string> Named;     // instruction -> given label
};

} // namespace

std::string disassemble(const Executable &Exe, const DisassembleOptions &Opts) {
  for (size_t I = 0; I < Exe.functions().size(); ++I)
    checkWritable(Exe.functions()[I], I);
  std::string Out;
  const auto &Consts = Exe.constants();
  const std::vector<std::string> ConstNames = constantNames(Exe);
  for (size_t I = 0; I < Consts.size(); ++I) {
    fmt::format_to(OutIt(Out), ".const ${} = ", ConstNames[I]);
    writeConstant(Out, Consts[I], I, Opts);
    Out += '\n';
  }
  // Blank lines between groups: the constants, each run of .extern and
  // .native lines, each .func.
  enum class Group { None, Decl, Other } Prev =
      Consts.empty() ? Group::None : Group::Other;
  for (const FunctionInfo &F : Exe.functions()) {
    Group G = F.Kind == FunctionKind::Bytecode ? Group::Other : Group::Decl;
    if (Prev != Group::None && (G == Group::Other || Prev != Group::Decl))
      Out += '\n';
    Prev = G;
    switch (F.Kind) {
    case FunctionKind::Packed:
      Out += ".extern ";
      writeName(Out, F.Name);
      Out += '\n';
      break;
    case FunctionKind::Native:
      Out += ".native ";
      writeName(Out, F.Name);
      if (!F.ParamNames.empty() || F.RegisterFileSize != 0)
        writeParams(Out, F.ParamNames);
      if (F.RegisterFileSize != F.NumParams)
        fmt::format_to(OutIt(Out), " .regs {}", F.RegisterFileSize);
      Out += '\n';
      break;
    case FunctionKind::Bytecode:
      FunctionWriter(Exe, &F - Exe.functions().data(), ConstNames, Out).write();
      break;
    }
  }
  return Out;
}

} // namespace vmjit::vm
