"""Kafka's wire format for the simulated brokers: frames, request headers, response bodies.

Contract: `split_frames(buffer)` cuts a byte stream into size-prefixed frames (Kafka's
`NetworkReceive`: a 4-byte big-endian size, then that many bytes) and returns the complete
frames and the rest. `decode_request(frame)` reads the request header and body with kio's
generated schemas and returns a `Request`, or raises `Malformed` (a frame that cannot be read:
the server closes the connection, as Kafka's `Processor` does on an `InvalidRequestException`).
`encode_response(api_key, version, correlation_id, values)` builds a response of that version
from plain values (a dict per entity; lists of dicts for arrays), leaving out fields the
version does not have and filling the ones the caller did not give with their zero values,
and returns the framed bytes. ApiVersions answers always use response header v0 (KIP-511),
so that a client that asked with a version too new can still read the error.
This module knows the wire, never the model.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import sys
import types
import typing
from enum import Enum
from functools import cache
from typing import NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from sim.kafka.wire.codec_errors import Malformed, peek_header

API_VERSIONS_KEY = 18
_SIZE = struct.Struct(">i")
# a frame larger than this is refused (Kafka's socket.request.max.bytes, 100 MiB)
MAX_FRAME_BYTES = 104_857_600


class Request(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: object  # the kio request entity; None when the version is not served


def split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete frames at the head of `buffer` (without their size prefix) and the rest.
    Raises `Malformed` for a negative or oversized frame size."""
    frames, pos = [], 0
    while len(buffer) - pos >= 4:
        (size,) = _SIZE.unpack_from(buffer, pos)
        if size < 0 or size > MAX_FRAME_BYTES:
            raise Malformed(f"frame size {size}")
        if len(buffer) - pos - 4 < size:
            break
        frames.append(bytes(buffer[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return frames, bytes(buffer[pos:])


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


@cache
def request_schema(api_key: int, version: int):
    """kio's request entity for (api_key, version), or None when kio has none."""
    try:
        return load_request_schema(api_key, version)
    except Exception:  # kio's UnknownAPIKey / UnknownEntity
        return None


@cache
def response_schema(api_key: int, version: int):
    return load_response_schema(api_key, version)


def decode_request(data: bytes, served: bool) -> Request:
    """Read one request frame. With `served` false (an API or version the broker does not
    serve) only the header's fixed fields are read and `body` is None."""
    api_key, version, corr = peek_header(data)
    schema = request_schema(api_key, version) if served else None
    if schema is None:
        return Request(api_key, version, corr, None, None)
    try:
        header, pos = entity_reader(schema.__header_schema__)(data, 0)
        body, used = entity_reader(schema)(data, pos)  # kio returns the bytes it read
    except Exception as exc:  # kio raises its own and struct errors on short or bad data
        raise Malformed(f"api {api_key} v{version}: {type(exc).__name__}") from None
    if pos + used != len(data):
        raise Malformed(f"api {api_key} v{version}: {len(data) - pos - used} bytes after the body")
    return Request(api_key, version, corr, header.client_id, body)


def encode_response(api_key: int, version: int, correlation_id: int, values: dict) -> bytes:
    """The framed response of `api_key` at `version` to request `correlation_id`."""
    schema = response_schema(api_key, version)
    header_schema = schema.__header_schema__
    if api_key == API_VERSIONS_KEY:  # KIP-511: always header v0
        header_schema = response_schema(API_VERSIONS_KEY, 0).__header_schema__
    out = _Buffer()
    entity_writer(header_schema)(out, header_schema(correlation_id=correlation_id))
    entity_writer(schema)(out, build(schema, values))
    return frame(bytes(out.data))


class _Buffer:
    """The smallest writable kio's writers accept."""

    def __init__(self):
        self.data = bytearray()

    def write(self, b) -> int:
        self.data += b
        return len(b)


def build(cls, values: dict):
    """An instance of the kio entity `cls` from `values`: fields the entity lacks are left
    out, missing ones take their zero value, nested entities are built from dicts."""
    hints = _hints(cls)
    kw = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if f.name in values:
            kw[f.name] = _convert(hint, values[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kw[f.name] = _zero(hint)
    return cls(**kw)


@cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls, sys.modules[cls.__module__].__dict__)


def _convert(hint, value):
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v) for v in value)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(inner[0], value)
    if dataclasses.is_dataclass(hint):
        return build(hint, value)
    if isinstance(hint, type) and issubclass(hint, datetime.timedelta):
        return datetime.timedelta(milliseconds=value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(value)
    return value


def _zero(hint):
    origin = typing.get_origin(hint)
    if origin is tuple:
        return ()
    if origin in (typing.Union, types.UnionType):
        return None
    if dataclasses.is_dataclass(hint):
        return build(hint, {})
    if isinstance(hint, type):
        if issubclass(hint, datetime.timedelta):
            return datetime.timedelta(0)
        if issubclass(hint, ErrorCode):
            return ErrorCode.none
        if issubclass(hint, bool):
            return False
        if issubclass(hint, int):
            return 0
        if issubclass(hint, str):
            return ""
        if issubclass(hint, bytes):
            return b""
    return None


def decode_response(api_key: int, version: int, data: bytes):
    """(correlation_id, body) of a response frame (without its size prefix) to a request of
    `api_key` at `version`, as a client reads it. Raises `Malformed`."""
    schema = response_schema(api_key, version)
    header_schema = schema.__header_schema__
    if api_key == API_VERSIONS_KEY:
        header_schema = response_schema(API_VERSIONS_KEY, 0).__header_schema__
    try:
        header, pos = entity_reader(header_schema)(data, 0)
        body, _end = entity_reader(schema)(data, pos)
    except Exception as exc:
        raise Malformed(f"api {api_key} v{version} response: {type(exc).__name__}") from None
    return header.correlation_id, body
