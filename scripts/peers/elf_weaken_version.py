"""Mark one symbol-version requirement (e.g. GLIBC_2.38) of ELF64 shared libraries as weak.

setup.sh first removes the version from every symbol that asked for it (patchelf --clear-symbol-version;
the preloaded qwentts_shim.c provides those symbols), but the library's version-needs table still lists
GLIBC_2.38, and an older glibc's loader refuses a library that needs a version it lacks unless the need
is weak (VER_FLG_WEAK). Usage: python elf_weaken_version.py GLIBC_2.38 LIB...
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

SHT_GNU_VERNEED = 0x6FFFFFFE
VER_FLG_WEAK = 0x2


def weaken(path: str, version: str) -> int:
    data = bytearray(Path(path).read_bytes())
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    verneed = next(s for s in sections if s[1] == SHT_GNU_VERNEED)
    strtab = sections[verneed[6]]  # sh_link: .dynstr

    def name(offset: int) -> str:
        start = strtab[4] + offset
        return bytes(data[start : data.index(0, start)]).decode()

    offset, changed = verneed[4], 0
    for _ in range(verneed[8]):  # sh_info: number of Verneed entries
        _ver, count, _file, aux, following = struct.unpack_from("<HHIII", data, offset)
        aux_offset = offset + aux
        for _ in range(count):
            _hash, flags, _other, vna_name, vna_next = struct.unpack_from("<IHHII", data, aux_offset)
            if name(vna_name) == version:
                struct.pack_into("<H", data, aux_offset + 4, flags | VER_FLG_WEAK)
                changed += 1
            aux_offset += vna_next
        if not following:
            break
        offset += following
    Path(path).write_bytes(bytes(data))
    return changed


if __name__ == "__main__":
    for lib in sys.argv[2:]:
        print(lib, sys.argv[1], "weak" if weaken(lib, sys.argv[1]) else "not needed")
