"""A small WebSocket client (RFC 6455) for tests of unsandboxd's terminal.

Standard library only, and independent of the project's Lua client and
of the server's C code: it is a third reading of the RFC. It signs the
handshake like any execution API request (spec section 3: HMAC-SHA256
over "ts:GET:/sessions/{id}/shell:"), masks every frame it sends, and can
also send what a hostile client would (unmasked frames, absurd lengths,
raw garbage) through send_raw.
"""
import base64
import hashlib
import hmac
import json
import os
import socket
import struct
import time
import urllib.parse
import urllib.request

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def sign(secret, ts, method, path, body=b""):
    msg = ("%s:%s:%s:" % (ts, method, path)).encode() + body
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()


def auth_headers(pk, sk, method, path, body=b""):
    ts = str(int(time.time()))
    return {"Authorization": "Bearer " + pk, "X-Timestamp": ts,
            "X-Signature": sign(sk, ts, method, path, body)}


def api(url, pk, sk, method, path, body=None):
    """One signed execution API request: (status, decoded JSON or None)."""
    data = b"" if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data if body is not None else None, method=method)
    for k, v in auth_headers(pk, sk, method, path, data).items():
        req.add_header(k, v)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, None


class Closed(Exception):
    pass


def frame(opcode, payload=b"", fin=True, mask=True):
    """One client frame (masked unless told otherwise)."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload)
    hdr = bytes([(0x80 if fin else 0) | opcode])
    mbit = 0x80 if mask else 0
    if n < 126:
        hdr += bytes([mbit | n])
    elif n < 65536:
        hdr += bytes([mbit | 126]) + struct.pack(">H", n)
    else:
        hdr += bytes([mbit | 127]) + struct.pack(">Q", n)
    if mask:
        key = os.urandom(4)
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        hdr += key
    return hdr + payload


class WS:
    """One connection. status/headers are the handshake's answer; only
    when status == 101 is it a WebSocket."""

    def __init__(self, url, path, headers, timeout=30, early=b""):
        u = urllib.parse.urlparse(url)
        self.timeout = timeout
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (u.hostname, u.port)]
        lines += ["%s: %s" % (k, v) for k, v in headers.items() if v is not None]
        # early: frames sent in the same write as the handshake, before its answer
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + early)
        self.buf = b""
        head = self._read_head()
        first, *rest = head.split("\r\n")
        self.status = int(first.split(" ")[1])
        self.headers = {}
        for line in rest:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.body = b""
        if self.status != 101:
            n = int(self.headers.get("content-length", "0"))
            self.body = self._read_exact(n) if n else b""

    def _fill(self):
        d = self.sock.recv(65536)
        if not d:
            raise Closed("connection closed")
        self.buf += d

    def _read_head(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head.decode("latin-1")

    def _read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, opcode, payload=b"", fin=True, mask=True):
        self.sock.sendall(frame(opcode, payload, fin, mask))

    def text(self, obj):
        self.send(1, json.dumps(obj))

    def keys(self, s):
        self.send(2, s)

    def close(self, code=1000, reason=""):
        self.send(8, struct.pack(">H", code) + reason.encode())

    def recv(self):
        """One frame from the server: (opcode, payload). Server frames must
        be unmasked and unfragmented here (the server sends no other)."""
        b0, b1 = self._read_exact(2)
        if b1 & 0x80:
            raise ValueError("a masked server frame")
        if not b0 & 0x80:
            raise ValueError("a fragmented server frame")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._read_exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read_exact(8))[0]
        return b0 & 0x0F, self._read_exact(n)

    def until_end(self, limit_s=60):
        """Reads until the server's close frame: (terminal bytes, text
        messages, close code or None when the socket just ended)."""
        out, texts, code = b"", [], None
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            self.sock.settimeout(max(0.05, end - time.monotonic()))
            try:
                op, data = self.recv()
            except (Closed, OSError):
                break
            finally:
                self.sock.settimeout(self.timeout)
            if op == 2:
                out += data
            elif op == 1:
                texts.append(json.loads(data))
            elif op == 8:
                code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else 1005
                break
        return out, texts, code

    def wait_for(self, needle, limit_s=30):
        """Terminal output until needle appears: the bytes, or None."""
        out = b""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            self.sock.settimeout(max(0.05, end - time.monotonic()))
            try:
                op, data = self.recv()
            except socket.timeout:
                return None
            finally:
                self.sock.settimeout(self.timeout)
            if op == 2:
                out = (out + data)[-65536:]         # the tail: output may be endless
                if needle.encode() in out:
                    return out
            elif op == 8:
                return None
        return None

    def shut(self):
        try:
            self.sock.close()
        except OSError:
            pass


def handshake_headers(pk, sk, path, **over):
    h = {"Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
         "Sec-WebSocket-Version": "13"}
    h.update(auth_headers(pk, sk, "GET", path))
    for k, v in over.items():
        h[k.replace("_", "-")] = v
    return h


def accept_of(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def attach(url, pk, sk, sid, early=b"", **over):
    path = "/sessions/%s/shell" % sid
    return WS(url, path, handshake_headers(pk, sk, path, **over), early=early)
