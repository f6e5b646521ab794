"""Throwaway TLS material for a local cluster: a CA, a broker certificate and a client certificate.

Everything is written as PEM into one folder, in the shapes both sides read directly:

    ca.pem           the CA's certificate (the truststore of the broker and of clients)
    broker.pem       the broker's private key (unencrypted PKCS#8) and certificate chain, one file:
                     Kafka's ``ssl.keystore.type=PEM`` keystore
    client.pem       the client's certificate
    client-key.pem   the client's private key (unencrypted PKCS#8)

The CA's own key is never written: nothing more can be signed later, so a copied folder
cannot mint certificates. Keys are EC P-256 (fast to make, accepted by Java and OpenSSL).
Private keys are written readable by the owner only. ``cryptography`` is imported only when
something is generated, so the launcher stays quick to load.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

VALID_DAYS = 825
BROKER_NAMES = ("localhost",)
BROKER_IPS = ("127.0.0.1",)


@dataclass(frozen=True)
class CertFiles:
    """Paths of the PEM files in one folder (see the module docstring)."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def broker(self) -> Path:
        return self.folder / "broker.pem"

    @property
    def client_cert(self) -> Path:
        return self.folder / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.folder / "client-key.pem"

    def complete(self) -> bool:
        return all(p.is_file() for p in (self.ca, self.broker, self.client_cert, self.client_key))


def ensure_certs(folder: str | Path) -> CertFiles:
    """The certificates in ``folder``, generated first when any file is missing."""
    files = CertFiles(Path(folder))
    if not files.complete():
        files = generate_certs(folder)
    return files


def generate_certs(
    folder: str | Path,
    broker_names: tuple[str, ...] = BROKER_NAMES,
    broker_ips: tuple[str, ...] = BROKER_IPS,
    client_name: str = "kazami-client",
) -> CertFiles:
    """Write a fresh CA, a broker certificate valid for ``broker_names`` and ``broker_ips`` (its subject
    alternative names) and a client certificate into ``folder``, replacing what was there."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    files = CertFiles(Path(folder))
    files.folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Kazami throwaway CA {now:%Y-%m-%d %H:%M:%S}")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    broker_key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in broker_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in broker_ips]
    broker_cert = _leaf(
        ca_cert,
        ca_key,
        broker_key,
        "kazami-broker",
        now,
        ExtendedKeyUsageOID.SERVER_AUTH,
        # Brokers may also be clients of each other over TLS.
        ExtendedKeyUsageOID.CLIENT_AUTH,
        alt_names=names,
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _leaf(ca_cert, ca_key, client_key, client_name, now, ExtendedKeyUsageOID.CLIENT_AUTH)

    _write(files.ca, _pem(ca_cert))
    _write(files.broker, _key_pem(broker_key) + _pem(broker_cert) + _pem(ca_cert), private=True)
    _write(files.client_cert, _pem(client_cert))
    _write(files.client_key, _key_pem(client_key), private=True)
    return files


def encrypt_key(source: str | Path, target: str | Path, password: str) -> Path:
    """Write the unencrypted PEM private key in ``source`` to ``target`` as encrypted PKCS#8 (what
    ``ssl_password`` / Kafka's ``ssl.key.password`` unlock)."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(source).read_bytes(), password=None)
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    )
    _write(Path(target), data, private=True)
    return Path(target)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: dt.datetime
) -> x509.CertificateBuilder:
    from cryptography import x509

    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        # A little in the past: a clock a few minutes behind must not find it "not yet valid".
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
    )


def _leaf(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    key: ec.EllipticCurvePrivateKey,
    common_name: str,
    now: dt.datetime,
    *usages: x509.ObjectIdentifier,
    alt_names: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        _builder(subject, ca_cert.subject, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _key_usage(cert_sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not cert_sign,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, private: bool = False) -> None:
    """Replace ``path`` with ``data``; a private file is created 0600 (never readable by others, not even
    for a moment)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)
