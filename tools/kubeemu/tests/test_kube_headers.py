"""kubeemu.headers.read_headers reads what http.client.parse_headers reads (the server's requests and
the client's answers go through it), and the server still answers requests its fast path leaves to
http.server."""

import http.client
import io
import random
import socket
import string

import pytest

from kube_helpers import EMULATOR_ONLY, REAL_CLUSTER
from kubeemu.headers import read_headers


def _same(block):
    ours, stdlib = read_headers(io.BytesIO(block)), http.client.parse_headers(io.BytesIO(block))
    assert type(ours) is type(stdlib)
    assert ours.items() == stdlib.items(), block
    for name in {k.lower() for k, _v in stdlib.items()} | {"content-length", "absent"}:
        assert ours.get(name) == stdlib.get(name) and ours.get_all(name) == stdlib.get_all(name), block
    assert ours.get_content_type() == stdlib.get_content_type()


def test_plain_and_odd_header_blocks_read_as_http_client_reads_them():
    rng = random.Random(7)
    values = string.printable.replace("\n", "").replace("\r", "") + "\t"
    for _ in range(3000):  # plain "Name: value" lines (the fast path)
        lines = [(rng.choice(["Host", "Accept", "X-a_b!~", "content-type", "Content-Length"]) + ":"
                  + rng.choice(["", " ", "  ", "\t"]) + "".join(rng.choice(values) for _ in range(rng.randint(0, 12)))
                  + rng.choice(["\r\n", "\n"])).encode() for _ in range(rng.randint(0, 6))]
        _same(b"".join(lines) + rng.choice([b"\r\n", b"\n", b""]))
    pieces = [b"A", b"b", b"-", b":", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\xe9", b"\x00", b"From ", b"\x85",
              b"\x0b", b"Content-Type: text/html; charset=x\r\n", b"X:\r\n"]
    for _ in range(3000):  # anything (folded lines, control bytes, ...: the email parser's path)
        _same(b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) + rng.choice([b"\r\n\r\n", b""]))


def test_limits_as_http_client():
    with pytest.raises(http.client.LineTooLong):
        read_headers(io.BytesIO(b"X: " + b"a" * 70000 + b"\r\n\r\n"))
    with pytest.raises(http.client.HTTPException):
        read_headers(io.BytesIO(b"X: a\r\n" * 101 + b"\r\n"))


def _raw(srv, data):
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return out
            out += chunk


@pytest.mark.skipif(REAL_CLUSTER, reason=EMULATOR_ONLY)
def test_server_answers_http10_and_folded_headers(kubeemu):
    answer = _raw(kubeemu, b"GET /version HTTP/1.0\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"gitVersion"' in answer
    answer = _raw(kubeemu, b"GET /version HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"gitVersion"' in answer
    answer = _raw(kubeemu, b"GET /version HTTP/1.1\r\n" + b"X: a\r\n" * 101 + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")
