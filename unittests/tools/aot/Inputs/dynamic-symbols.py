"""dynamic-symbols.py LIB: prints the symbols LIB defines in its dynamic
symbol table and the libraries it needs (DT_NEEDED), read with the ELF
layout of 64-bit little-endian files (what `vmjit compile` writes here)."""

import struct
import sys

data = open(sys.argv[1], "rb").read()
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "ELF64 LE"
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
            for i in range(shnum)]


def strings(index):
    return sections[index][4]  # sh_offset


def cstr(off):
    return data[off:data.index(b"\0", off)].decode()


defined, needed = [], []
for name, kind, flags, addr, off, size, link, info, align, entsize in sections:
    if kind == 11:  # SHT_DYNSYM
        for i in range(1, size // entsize):
            st_name, st_info, _, st_shndx = struct.unpack_from(
                "<IBBH", data, off + i * entsize)
            if st_shndx != 0:
                defined.append(cstr(strings(link) + st_name))
    if kind == 6:  # SHT_DYNAMIC
        for i in range(size // 16):
            tag, val = struct.unpack_from("<qQ", data, off + i * 16)
            if tag == 1:  # DT_NEEDED
                needed.append(cstr(strings(link) + val))
print("defined:", " ".join(sorted(defined)) or "none")
print("needed:", " ".join(needed) or "none")
