//===- binary_format.h - Layout constants of the binary format ------------===//
//
// Shared by the writer and the reader; the prose description is
// docs/binary-format.md.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_FORMATS_BINARY_FORMAT_H
#define VMJIT_LIB_FORMATS_BINARY_FORMAT_H

#include <bit>
#include <cstdint>

namespace vmjit::vm::binfmt {

static_assert(std::endian::native == std::endian::little,
              "the binary format is little-endian and read in place");

inline constexpr char kMagic[8] = {'V', 'M', 'J', 'I', 'T', 'E', 'X', 'E'};
inline constexpr uint64_t kAlign = 64;
inline constexpr uint64_t kHeaderSize = 64;
inline constexpr uint64_t kSectionEntrySize = 32;

constexpr uint32_t fourcc(char A, char B, char C, char D) {
  return uint32_t(uint8_t(A)) | uint32_t(uint8_t(B)) << 8 |
         uint32_t(uint8_t(C)) << 16 | uint32_t(uint8_t(D)) << 24;
}
inline constexpr uint32_t kSectionFunctions = fourcc('F', 'U', 'N', 'C');
inline constexpr uint32_t kSectionConstants = fourcc('C', 'N', 'S', 'T');
inline constexpr uint32_t kSectionCode = fourcc('C', 'O', 'D', 'E');
inline constexpr uint32_t kSectionData = fourcc('D', 'A', 'T', 'A');
/// Optional: the register and label names of vmasm text (DebugNames).
inline constexpr uint32_t kSectionNames = fourcc('N', 'A', 'M', 'E');
/// Optional: the constant names of vmasm text (Executable::constantName).
inline constexpr uint32_t kSectionConstNames = fourcc('C', 'N', 'A', 'M');
/// Optional: where vmasm text wrote each instruction (SourceMap).
inline constexpr uint32_t kSectionSourceMap = fourcc('L', 'I', 'N', 'E');
/// The largest line or column the LINE section holds (the assembler counts
/// them in an int).
inline constexpr uint32_t kMaxSourcePos = 0x7fffffff;

/// Tags of constant pool entries.
enum ConstTag : uint8_t {
  kConstNull = 0,
  kConstInt = 1,
  kConstFloat = 2,
  kConstBool = 3,
  kConstString = 4,
  kConstDType = 5,
  kConstShape = 6,
  kConstTensor = 7,
};

// Header (64 bytes): magic[8], u32 version, u32 section count, u64 file
// size, u64 checksum of (header with this field zero + section table),
// 32 reserved zero bytes.
inline constexpr uint64_t kHeaderChecksumOffset = 24;

// Section entry (32 bytes): u32 kind, u32 flags (0), u64 offset, u64 size,
// u64 XXH3-64 of the section's bytes.

inline constexpr uint64_t alignUp(uint64_t X) {
  return (X + kAlign - 1) / kAlign * kAlign;
}

} // namespace vmjit::vm::binfmt

#endif // VMJIT_LIB_FORMATS_BINARY_FORMAT_H
