"""POSTed forms read as a bounded stream, the CSRF token checked before anything large.

Starlette's `request.form()` reads a whole urlencoded body into memory and spools every
uploaded file to disk before the handler sees a single field, so a 300 MB upload with a forged
token was read in full before the CSRF check and before the upload's size limit. Here:

- a declared `Content-Length` over the limit is refused (413) before one byte is read;
- the body is counted while it streams and refused (413) the moment it passes the limit, so a
  body without a length (chunked) cannot get around it;
- the token comes from the `X-CSRF-Token` header (checked before reading) or from the `csrf`
  field, which our pages put first in every form: in a multipart body it is checked when its
  part ends, and a file part that starts before a valid token is refused (403) unread.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable
from urllib.parse import parse_qsl

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.requests import Request

from offsetkeeper.web.http_error import HttpError

MB = 1024 * 1024
FORM_LIMIT = 1 * MB           # any form without a file
UPLOAD_LIMIT = 20 * MB        # one uploaded file (the wizard's --from-file CSV)
SPOOL = 1 * MB                # an upload is kept in memory up to this, then on disk

CSRF_FIELD = "csrf"
BAD_CSRF = "missing or invalid CSRF token: reload the page and try again"


def _too_large(limit: int) -> HttpError:
    return HttpError(413, f"the request is larger than {limit // MB} MB: refused")


async def _bounded(stream: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    seen = 0
    async for chunk in stream:
        seen += len(chunk)
        if seen > limit:
            raise _too_large(limit)
        yield chunk


async def read_form(request: Request, csrf_ok: Callable[[str | None], bool], *,
                    limit: int = FORM_LIMIT, file_limit: int = UPLOAD_LIMIT) -> FormData:
    """The form of a POST, after its CSRF token proved valid; HttpError 403 / 413 otherwise."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise _too_large(limit)
    header_token = request.headers.get("x-csrf-token")
    if header_token is not None and not csrf_ok(header_token):
        raise HttpError(403, BAD_CSRF)
    verified = header_token is not None
    body = _bounded(request.stream(), limit)
    ctype, params = parse_options_header(request.headers.get("content-type"))
    if ctype == b"multipart/form-data":
        parts = _Multipart(params.get(b"boundary", b""), csrf_ok, verified, file_limit)
        async for chunk in body:
            parts.write(chunk)
        return parts.finish()
    raw = b"".join([c async for c in body])
    items = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
    if not verified and not csrf_ok(dict(items).get(CSRF_FIELD)):
        raise HttpError(403, BAD_CSRF)
    return FormData(items)


class _Multipart:
    """python-multipart's streaming parser with our callbacks: fields in memory, files spooled,
    the CSRF field checked as soon as it is complete."""

    def __init__(self, boundary: bytes, csrf_ok, verified: bool, file_limit: int) -> None:
        if not boundary:
            raise HttpError(400, "malformed form: multipart without a boundary")
        self.csrf_ok, self.verified, self.file_limit = csrf_ok, verified, file_limit
        self.items: list[tuple[str, str | UploadFile]] = []
        self._field = self._value = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._name = ""
        self._filename: str | None = None
        self._data = bytearray()
        self._file = None
        self._size = 0
        self.parser = MultipartParser(boundary, {
            "on_part_begin": self._begin, "on_header_field": self._hfield,
            "on_header_value": self._hvalue, "on_header_end": self._hend,
            "on_headers_finished": self._headers_done, "on_part_data": self._part_data,
            "on_part_end": self._end})

    def write(self, chunk: bytes) -> None:
        try:
            self.parser.write(chunk)
        except HttpError:
            raise
        except Exception as exc:  # python-multipart's parse errors
            raise HttpError(400, f"malformed form: {exc}") from None

    def finish(self) -> FormData:
        self.parser.finalize()
        if not self.verified:
            raise HttpError(403, BAD_CSRF)
        return FormData(self.items)

    # -- callbacks -------------------------------------------------------------------------
    def _begin(self) -> None:
        self._headers, self._data, self._file, self._size = [], bytearray(), None, 0

    def _hfield(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _hvalue(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _hend(self) -> None:
        self._headers.append((self._field.lower(), self._value))
        self._field = self._value = b""

    def _headers_done(self) -> None:
        disposition = dict(self._headers).get(b"content-disposition", b"")
        _, opts = parse_options_header(disposition)
        self._name = opts.get(b"name", b"").decode("utf-8", "replace")
        fn = opts.get(b"filename")
        self._filename = None if fn is None else fn.decode("utf-8", "replace")
        if self._filename is not None:
            if not self.verified:
                # A file before a valid token: not one byte of it is kept (our form sends the
                # token first; scripts can send the X-CSRF-Token header).
                raise HttpError(403, BAD_CSRF)
            # Owned by the UploadFile it becomes (deleted when closed or collected).
            self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL)  # noqa: SIM115

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        self._size += end - start
        if self._file is not None:
            if self._size > self.file_limit:
                raise HttpError(413, f"the uploaded file is larger than "
                                     f"{self.file_limit // MB} MB: refused")
            self._file.write(data[start:end])
        else:
            self._data += data[start:end]

    def _end(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            headers = Headers(raw=[(k, v) for k, v in self._headers])
            self.items.append((self._name, UploadFile(self._file, size=self._size,
                                                      filename=self._filename, headers=headers)))
            return
        value = self._data.decode("utf-8", "replace")
        if self._name == CSRF_FIELD and not self.verified:
            if not self.csrf_ok(value):
                raise HttpError(403, BAD_CSRF)
            self.verified = True
        self.items.append((self._name, value))
