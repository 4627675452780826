# SPDX-License-Identifier: MIT
"""The cdef's struct layouts against the C header: a C program compiled against
client/include/brooq/brooq.h prints each struct's size and every field's offset, and
they must equal what cffi computed from the package's CDEF. A field added to the
header and not to CDEF (or the reverse) fails here, before it corrupts a call."""

import os
import subprocess

from brooq._ffi import LAYOUT_STRUCTS, ffi

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "..", "..", "client", "include")


def c_layout(tmp_path):
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <brooq/brooq.h>", "int main(void) {"]
    expect = {}
    for name in LAYOUT_STRUCTS:
        t = ffi.typeof(name)
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (name, name))
        expect[name] = ffi.sizeof(t)
        for field, _ in t.fields:
            key = "%s.%s" % (name, field)
            lines.append('printf("%s %%zu\\n", offsetof(%s, %s));' % (key, name, field))
            expect[key] = ffi.offsetof(t, field)
    lines += ["return 0;", "}"]
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text("\n".join(lines) + "\n")
    subprocess.run(["cc", "-std=c11", "-I", INCLUDE, "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    got = dict((k, int(v)) for k, v in (line.split() for line in out.splitlines()))
    return expect, got


def test_cdef_layouts_match_the_header(tmp_path):
    expect, got = c_layout(tmp_path)
    # Sizes too: an offset cannot see a field appended in the header, a size can.
    assert len(expect) > len(LAYOUT_STRUCTS)  # fields were compared, not only sizes
    wrong = {k: (expect[k], got.get(k)) for k in expect if expect[k] != got.get(k)}
    assert wrong == {}, "cdef (cffi) vs header (C): %r" % wrong

