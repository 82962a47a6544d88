"""What can be read of a frame without kio: its fixed header fields, and the error for a frame
that cannot be read (`codec` raises it too). Kept apart so a broker loads kio only when a real
client first talks to it."""

from __future__ import annotations

import struct


class Malformed(Exception):
    """A frame that cannot be read as a request."""


def peek_header(data: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame: the first fields of every
    request header version. Raises `Malformed` for a frame too short to hold them."""
    if len(data) < 8:
        raise Malformed(f"request of {len(data)} bytes")
    return struct.unpack_from(">hhi", data, 0)
