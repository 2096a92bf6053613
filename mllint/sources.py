"""Reading a file's bytes as text: Python source (PEP 263 coding cookie, BOM, UTF-8 by default)
or a notebook's JSON (UTF-8). Below the engine, the fixer and the reports, which all read files
the same way (files.py, which the fixer's and the reports' imports need not pull in with its
configuration, keeps the same one-line test of a notebook path)."""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass


# What is read of a file at most, whatever `max-file-size` says (a guard for memory; a
# notebook's JSON, outputs included, may be much larger than the code it holds).
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass
class Decoded:
    text: str
    encoding: str
    newline: str


class UnreadableFile(Exception):
    """A file that cannot be linted as Python text (binary, undecodable, too large)."""


def decode(data: bytes) -> Decoded:
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # A cookie naming a codec this interpreter does not have (``future_fstrings``, a
        # codec a package registers at import time) still marks a UTF-8 file: read it as
        # such, as those codecs' own files are. A BOM that contradicts the cookie is bad.
        if "unknown encoding" not in str(exc):
            raise UnreadableFile(f"bad coding declaration: {exc}") from None
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise UnreadableFile(f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
        encoding = "utf-8-sig"
    newline = "\r\n" if "\r\n" in text else "\n"
    return Decoded(text, encoding, newline)


def decode_file(path: str, data: bytes) -> Decoded:
    """`decode`, except that a notebook (``.ipynb``) is JSON: UTF-8 (a BOM is allowed), no coding cookie."""
    if not str(path).lower().endswith(".ipynb"):
        return decode(data)
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"cannot decode as utf-8: {exc.reason}") from None
    return Decoded(text, encoding, "\r\n" if "\r\n" in text else "\n")
