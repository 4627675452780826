# SPDX-License-Identifier: MIT
"""A PEP 517 build backend for this pure-Python package, in the tree (backend-path), so
that `pip install ./client/python` needs nothing from a package index: no setuptools
or wheel to download into an isolated build environment. It writes a wheel (and an
sdist) of brooq/ with the metadata below."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "brooq"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)

METADATA = """Metadata-Version: 2.1
Name: brooq
Version: %s
Summary: Workers and producers for the brooq job queue, on libbrooq-client
License: MIT
Requires-Python: >=3.9
Requires-Dist: cffi>=1.15

Python binding of libbrooq-client (cffi, ABI mode): the C library must be installed.
See docs/python.md in the brooq sources.
""" % VERSION

WHEEL = """Wheel-Version: 1.0
Generator: brooq_build
Root-Is-Purelib: true
Tag: %s
""" % TAG


def _package_files():
    out = []
    for d, _, names in os.walk(os.path.join(HERE, NAME)):
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":
                p = os.path.join(d, n)
                out.append((os.path.relpath(p, HERE), p))
    return sorted(out)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(WHEEL)
    return DIST_INFO


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        entries = [(arc, open(p, "rb").read()) for arc, p in _package_files()]
        entries += [(DIST_INFO + "/METADATA", METADATA.encode()), (DIST_INFO + "/WHEEL", WHEEL.encode())]
        for arc, data in entries:
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(DIST_INFO + "/RECORD,,")
        z.writestr(DIST_INFO + "/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        files = _package_files() + [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                                    ("_build/brooq_build.py", os.path.abspath(__file__))]
        for arc, p in files:
            t.add(p, arcname=base + "/" + arc)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
