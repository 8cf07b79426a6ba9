"""A learning platform's export zip, read without trusting it: which entries may be read
(none is ever written under its own name), and each one copied out within a budget of
uncompressed bytes that counts what is really decompressed, not what the zip declares."""

from __future__ import annotations

import re
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from attncourse.instructor.run.sandbox import MiB, megabytes

# A class's export holds a few entries per learner; far more is a zip made to wear out the reader.
MAX_ENTRIES = 50_000
DEFAULT_MAX_BYTES = 1024 * MiB
_CHUNK = 1 << 16


def open_export(path: Path) -> zipfile.ZipFile:
    """The zip at ``path``; ValueError if it is none, or holds more than MAX_ENTRIES entries."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise ValueError(f"{path} is not a zip file that can be read ({error})") from None
    if len(archive.infolist()) > MAX_ENTRIES:
        archive.close()
        raise ValueError(f"{path} holds {len(archive.infolist()):,} entries; import reads exports of up to "
                         f"{MAX_ENTRIES:,}")
    return archive


def entry_problem(info: zipfile.ZipInfo) -> str | None:
    """Why the entry ``info`` is not read (None if it may be). Its name is the zip's
    maker's text, and in part the learner's: an absolute path, a ``..``, a symbolic link,
    an encrypted or hidden entry (a Mac's ``__MACOSX`` copies among them) is refused."""
    name = info.filename
    parts = [part for part in name.replace("\\", "/").split("/") if part]
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        return "an absolute path (nothing is written outside --out)"
    if ".." in parts:
        return "a name that climbs out of the folder (..): nothing is written outside --out"
    if info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16):  # 3: made on Unix, mode in the top bits
        return "a symbolic link (import follows none)"
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in name):  # not the joiners of Persian or emoji
        return "a name with control characters"
    if info.flag_bits & 0x1:
        return "encrypted"
    if any(part.startswith(".") or part == "__MACOSX" for part in parts):
        return "a hidden file, or a Mac's copy of one (__MACOSX)"
    return None


def is_notebook(name: str) -> bool:
    """Whether ``name`` is a notebook's, as Jupyter opens it (whatever the case of .ipynb)."""
    return name.lower().endswith(".ipynb")


class Budget:
    """The uncompressed bytes an import may still read: each copy counts the bytes it
    decompresses and stops, refusing, at the first byte past the budget."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def copy(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, to: Path) -> None:
        """Write ``info``'s bytes to ``to``, a new file (never one that exists, nor through a link)."""
        with open(to, "xb") as target:
            for chunk in self._chunks(archive, info):
                target.write(chunk)

    def read(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
        """``info``'s bytes."""
        return b"".join(self._chunks(archive, info))

    def _chunks(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
        try:
            with archive.open(info) as source:
                while chunk := source.read(_CHUNK):
                    self._spend(len(chunk), info)
                    yield chunk
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
            raise ValueError(f"{info.filename!r} in the zip cannot be read ({error}): nothing was imported") from None

    def _spend(self, size: int, info: zipfile.ZipInfo) -> None:
        self.used += size
        if self.used > self.limit:
            raise ValueError(f"the zip unpacks to more than {megabytes(self.limit)} (reached in {info.filename!r}): "
                             "nothing was imported; raise --max-size if the export is that large")
