#!/usr/bin/python3
"""Checks the layering of vmjit's libraries: which folder may include which.

Each folder of lib/ (with its public headers in include/vmjit/<folder>/)
may include only the folders LAYERS names for it, and itself. An include is
placed by its path: "vmjit/<folder>/..." is include/vmjit/<folder>; a
quoted include found beside the including file (or below include/) is the
folder that holds it. lib/builtins/kv_cache is a folder of its own here,
above the rest of lib/builtins (which must not include it), though both
build into vmjit_builtins.

  scripts/check_layering.py [--root DIR]

Prints each include that breaks the table and exits 1; exits 0 when there
is none. KNOWN lists the back edges the tree has today, file by file; one
that is gone must be removed from it (so the table stays true).
The ctest `layering` runs it on the source tree.
"""

import argparse
import os
import re
import sys

# folder -> the folders it may include (besides itself).
LAYERS = {
    "runtime": set(),
    "kernels": {"runtime"},
    "bytecode": {"runtime"},
    "files": {"runtime"},
    "text": {"bytecode", "files", "runtime"},
    "formats": {"bytecode", "text", "files", "runtime"},
    "builtins": {"kernels", "runtime"},
    "builtins/kv_cache": {"builtins", "kernels", "runtime"},
    "vm": {"builtins", "formats", "text", "bytecode", "files", "kernels",
           "runtime"},
    "report": {"vm", "builtins", "formats", "text", "bytecode", "files",
               "kernels", "runtime"},
    "jit": {"vm", "builtins", "formats", "text", "bytecode", "files",
            "kernels", "runtime"},
}

# Back edges the tree has today, (file, included header): the builtins use
# the VM that calls them (alloc_storage takes the VM's allocator and
# devices) and closures keep the layout tier 2 reads (native_code.h),
# while every VM registers the builtins when it is created.
KNOWN = {
    ("lib/builtins/builtins_storage.cpp", "vmjit/vm/allocator.h"),
    ("lib/builtins/builtins_storage.cpp", "vmjit/vm/virtual_machine.h"),
    ("lib/builtins/builtins_closure.cpp", "vmjit/vm/native_code.h"),
}

SOURCE_SUFFIXES = (".h", ".cpp", ".c", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def folderOfPath(Rel):
    """The folder of a tree-relative path, or None outside the table."""
    Parts = Rel.split("/")
    if Parts[0] == "lib" and len(Parts) > 2:
        if Parts[1] == "builtins" and Parts[2] == "kv_cache" and len(Parts) > 3:
            return "builtins/kv_cache"
        return Parts[1] if Parts[1] in LAYERS else None
    if Parts[0] == "include" and len(Parts) > 3 and Parts[1] == "vmjit":
        return Parts[2] if Parts[2] in LAYERS else None
    if Parts[0] == "jit":
        return "jit"
    return None


def folderOfInclude(Root, File, Header):
    """The folder an include of `File` names, or None (system headers)."""
    Local = os.path.normpath(os.path.join(os.path.dirname(File), Header))
    if os.path.isfile(os.path.join(Root, Local)):
        return folderOfPath(Local)
    if Header.startswith("vmjit/"):
        return folderOfPath("include/" + Header)
    return None


def sources(Root):
    for Top in ("lib", "include/vmjit", "jit"):
        for Dir, _, Files in os.walk(os.path.join(Root, Top)):
            for Name in sorted(Files):
                if Name.endswith(SOURCE_SUFFIXES):
                    Path = os.path.join(Dir, Name)
                    yield os.path.relpath(Path, Root)


def check(Root):
    Errors, Seen = [], set()
    for File in sources(Root):
        From = folderOfPath(File)
        if From is None:
            continue
        with open(os.path.join(Root, File), encoding="utf-8") as F:
            Text = F.read()
        for Header in INCLUDE.findall(Text):
            To = folderOfInclude(Root, File, Header)
            if To is None or To == From or To in LAYERS[From]:
                continue
            if (File, Header) in KNOWN:
                Seen.add((File, Header))
                continue
            Errors.append(f"{File}: includes {Header}: {From} may not "
                          f"include {To} (scripts/check_layering.py)")
    for File, Header in sorted(KNOWN - Seen):
        Errors.append(f"{File}: no longer includes {Header}: remove it from "
                      f"KNOWN in scripts/check_layering.py")
    return Errors


def main():
    Parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    Parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    Args = Parser.parse_args()
    Errors = check(os.path.abspath(Args.root))
    for E in Errors:
        print(E)
    if Errors:
        print(f"layering: {len(Errors)} include(s) break the table")
        return 1
    print("layering: every include follows the table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
