"""Compression bombs built in milliseconds: gzip streams of zeros that inflate to gigabytes.

``gzip.compress`` of a gigabyte of zeros takes tens of seconds on a busy machine; a deflate block
ended by a full flush does not depend on what came before it, so one such block of a mebibyte of
zeros, repeated, is the same stream. Only the first bytes of a bomb are ever decoded (the body cap
stops it), so its trailer's checksum is left at zero.
"""

from __future__ import annotations

import functools
import gzip
import struct
import zlib
from typing import Final

__all__ = ["gzip_zeros", "stacked_gzip_bomb"]

_MIB: Final = 1 << 20
_GZIP_HEADER: Final = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"


@functools.cache
def _zero_block() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(b"\0" * _MIB) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(b"\0" * _MIB) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert block == again, "a fully flushed block depends on nothing before it"
    return block


def gzip_zeros(mebibytes: int) -> bytes:
    """A gzip stream that inflates to ``mebibytes`` MiB of zero bytes (checksum left unset)."""
    final = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()
    trailer = struct.pack("<II", 0, (mebibytes * _MIB) & 0xFFFFFFFF)
    return _GZIP_HEADER + _zero_block() * mebibytes + final + trailer


def stacked_gzip_bomb(mebibytes: int, depth: int = 2) -> bytes:
    """``gzip_zeros(mebibytes)`` gzipped again until ``depth`` codings are stacked (``gzip, gzip``)."""
    body = gzip_zeros(mebibytes)
    for _ in range(depth - 1):
        body = gzip.compress(body, compresslevel=9)
    return body
