"""Why a secured cluster refuses this client: one TLS handshake and one SASL exchange, done by hand.

kafka-python retries a refused TLS handshake or SASL login until its bootstrap time-out and then
reports only that it could not bootstrap (a SASL failure even looks like a dropped connection: the
broker sends its refusal and closes at once, and kafka-python drops data that arrives together with
the close). So when a secured cluster does not answer, the connection asks once more, here, with a
blocking socket that reads exactly the bytes of each answer, and turns the refusal into a sentence.

Only the requests needed are written: SaslHandshake v1, SaslAuthenticate v1 (PLAIN, and SCRAM per
RFC 5802) and ApiVersions v0 (to see a TLS 1.3 client-certificate refusal, which arrives on the
first read after the handshake). Nothing here logs, and no message contains the password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
import struct
import time

from broker.client.config import ClusterConfig

CLIENT_ID = b"kazami-diagnose"
API_SASL_HANDSHAKE = 17
API_VERSIONS = 18
API_SASL_AUTHENTICATE = 36
# OpenSSL's verify codes worth their own sentence.
_EXPIRED, _NOT_YET_VALID, _HOSTNAME_MISMATCH = 10, 9, 62
_CLIENT_CERT_REFUSED = (
    "TLSV1_ALERT_UNKNOWN_CA",
    "SSLV3_ALERT_BAD_CERTIFICATE",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
    "TLSV1_ALERT_ACCESS_DENIED",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED",
    "TLSV1_ALERT_DECRYPT_ERROR",
)
_CLIENT_CERT_MISSING = ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_HANDSHAKE_FAILURE")


class _Refused(Exception):
    """The broker refused us; the message says why."""


class _Silent(Exception):
    """The broker could not be asked (unreachable, closed, slow): no verdict."""


def diagnose_refusal(config: ClusterConfig, context: ssl.SSLContext | None, timeout: float) -> str | None:
    """Why the first bootstrap server of ``config`` that answers refuses this client (TLS or SASL), or
    None when it accepts it or none answers within ``timeout`` seconds (then the cluster is simply
    unreachable). ``context`` is the TLS context the clients use (None without TLS)."""
    if config.security_protocol == "PLAINTEXT":
        return None
    deadline = time.monotonic() + timeout
    for server in config.bootstrap_servers:
        if time.monotonic() >= deadline:
            break
        try:
            _ask(config, context, server, deadline)
        except _Refused as refused:
            return str(refused)
        except _Silent:
            continue
        return None
    return None


def _ask(config: ClusterConfig, context: ssl.SSLContext | None, server: str, deadline: float) -> None:
    host, _, port = server.rpartition(":")
    try:
        raw = socket.create_connection((host, int(port)), timeout=_left(deadline))
    except OSError:
        raise _Silent from None
    with raw:
        sock: socket.socket = raw
        if context is not None:
            sock = _tls(config, context, raw, host, server, deadline)
        with sock:
            if config.security_protocol.startswith("SASL_"):
                _sasl(config, sock, server, deadline)
            else:
                _request(config, sock, server, deadline, API_VERSIONS, 0, b"")


def _tls(
    config: ClusterConfig, context: ssl.SSLContext, raw: socket.socket, host: str, server: str, deadline: float
) -> ssl.SSLSocket:
    raw.settimeout(_left(deadline))
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        raise _Refused(_verify_failure(config, exc, host, server)) from None
    except ssl.SSLError as exc:
        raise _Refused(_tls_failure(config, exc, server)) from None
    except OSError:
        raise _Silent from None


def _verify_failure(config: ClusterConfig, exc: ssl.SSLCertVerificationError, host: str, server: str) -> str:
    code = exc.verify_code
    if code == _HOSTNAME_MISMATCH:
        return (
            f"TLS: the certificate of the broker at {server} is not valid for the name {host!r} "
            "(the hostname check is on)."
        )
    if code == _EXPIRED:
        return f"TLS: the certificate of the broker at {server} has expired."
    if code == _NOT_YET_VALID:
        return f"TLS: the certificate of the broker at {server} is not valid yet (check the clocks)."
    if config.ssl_cafile:
        signer = f"the CA in {config.ssl_cafile}"
    else:
        signer = "a CA this machine trusts, and no CA file is configured"
    return f"TLS: the certificate of the broker at {server} is not signed by {signer} ({exc.verify_message})."


def _tls_failure(config: ClusterConfig, exc: ssl.SSLError, server: str) -> str:
    reason = exc.reason or ""
    if reason in _CLIENT_CERT_MISSING and not config.ssl_certfile:
        return f"TLS: the broker at {server} requires a client certificate and none is configured."
    if reason in _CLIENT_CERT_REFUSED + _CLIENT_CERT_MISSING:
        if config.ssl_certfile:
            return (
                f"TLS: the broker at {server} refused the client certificate in {config.ssl_certfile} "
                "(not signed by a CA it trusts?)."
            )
        return f"TLS: the broker at {server} requires a client certificate and none is configured."
    if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
        return f"TLS: the broker at {server} does not speak TLS on that port (a PLAINTEXT listener?)."
    if reason == "UNEXPECTED_EOF_WHILE_READING" or isinstance(exc, ssl.SSLEOFError):
        return (
            f"TLS: the broker at {server} closed the connection during the TLS handshake "
            "(is that port a PLAINTEXT or SASL_PLAINTEXT listener?)."
        )
    return f"TLS: the handshake with the broker at {server} failed ({reason or type(exc).__name__})."


# ---------------------------------------------------------------- SASL


def _sasl(config: ClusterConfig, sock: socket.socket, server: str, deadline: float) -> None:
    mechanism = config.sasl_mechanism or ""
    user = config.sasl_username or ""
    password = config.sasl_password or ""
    body = _request(config, sock, server, deadline, API_SASL_HANDSHAKE, 1, _string(mechanism))
    error, offered = _handshake_answer(body)
    if error or mechanism not in offered:
        raise _Refused(
            f"SASL: the broker at {server} does not offer {mechanism}; it offers {', '.join(offered) or 'nothing'}."
        )
    refused = f"SASL authentication failed for user {user!r} ({mechanism}) at {server}: wrong user name or password"
    if mechanism == "PLAIN":
        _authenticate(config, sock, server, deadline, b"\0" + user.encode() + b"\0" + password.encode(), refused)
        return
    _scram(config, sock, server, deadline, mechanism, user, password, refused)


def _scram(
    config: ClusterConfig,
    sock: socket.socket,
    server: str,
    deadline: float,
    mechanism: str,
    user: str,
    password: str,
    refused: str,
) -> None:
    digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    nonce = secrets.token_urlsafe(24)
    name = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={name},r={nonce}"
    server_first = _authenticate(config, sock, server, deadline, f"n,,{first_bare}".encode(), refused).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    if not fields.get("r", "").startswith(nonce) or "s" not in fields or "i" not in fields:
        raise _Refused(f"{refused} (the broker's SCRAM answer was not understood).")
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, digest)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    _authenticate(config, sock, server, deadline, f"{without_proof},p={proof}".encode(), refused)


def _authenticate(
    config: ClusterConfig, sock: socket.socket, server: str, deadline: float, token: bytes, refused: str
) -> bytes:
    """One SaslAuthenticate v1 round; the broker's bytes, or _Refused when it says no (or hangs up, which
    is how it says no when it does not answer in words)."""
    try:
        body = _request(config, sock, server, deadline, API_SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token)
    except _Silent:
        raise _Refused(f"{refused} (the broker closed the connection).") from None
    (error,) = struct.unpack_from(">h", body, 0)
    if error:
        raise _Refused(f"{refused}.")
    (length,) = struct.unpack_from(">h", body, 2)
    at = 4 + max(length, 0)
    (size,) = struct.unpack_from(">i", body, at)
    return bytes(body[at + 4 : at + 4 + max(size, 0)])


def _handshake_answer(body: bytes) -> tuple[int, list[str]]:
    error, count = struct.unpack_from(">hi", body, 0)
    at, offered = 6, []
    for _ in range(max(count, 0)):
        (length,) = struct.unpack_from(">h", body, at)
        offered.append(body[at + 2 : at + 2 + length].decode())
        at += 2 + length
    return error, offered


# ---------------------------------------------------------------- the wire


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _request(
    config: ClusterConfig, sock: socket.socket, server: str, deadline: float, api: int, version: int, body: bytes
) -> bytes:
    """Send one request (header v1) and return its answer's body (after the correlation id)."""
    correlation = secrets.randbelow(2**31)
    header = struct.pack(">hhi", api, version, correlation) + struct.pack(">h", len(CLIENT_ID)) + CLIENT_ID
    payload = header + body
    try:
        sock.settimeout(_left(deadline))
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", _read(sock, 4, deadline))
        answer = _read(sock, size, deadline)
    except ssl.SSLError as exc:
        # TLS 1.3: a refused client certificate shows on the first read after the handshake; any other
        # TLS error here is a connection going away.
        if exc.reason in _CLIENT_CERT_REFUSED + _CLIENT_CERT_MISSING:
            raise _Refused(_tls_failure(config, exc, server)) from None
        raise _Silent from None
    except OSError:
        raise _Silent from None
    if len(answer) < 4 or struct.unpack_from(">i", answer, 0)[0] != correlation:
        raise _Silent
    return answer[4:]


def _read(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        sock.settimeout(_left(deadline))
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("closed")
        data += chunk
    return data


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Silent
    return left
