"""An OpenLDAP directory for the LDAP sign-in tests: Debian's slapd (`make system-deps` installs it), run by the test
as its own process on a loopback port with a configuration of its own (no system service), StartTLS with the
embedded cluster's test CA (broker/local/certs.py). The directory holds people under ou=people and groups
(groupOfNames) under ou=groups of SUFFIX."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from broker.local.certs import generate_certs
from console.devserver import free_port
from tests.shared_services import server_process

SUFFIX = "dc=kazami,dc=test"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "kz-directory-root-5!"  # a throwaway directory's
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SCHEMAS = ("core", "cosine", "inetorgperson")


@dataclass(frozen=True)
class Directory:
    url: str  # ldap://127.0.0.1:<port>
    ca_file: Path


def _slapd() -> str:
    found = shutil.which("slapd") or ("/usr/sbin/slapd" if Path("/usr/sbin/slapd").exists() else None)
    if found is None:
        raise RuntimeError("OpenLDAP is not installed: `make system-deps` installs Debian's slapd and ldap-utils.")
    return found


def _config(home: Path, certs: Path) -> str:
    includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
    return f"""{includes}
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {home}/slapd.pid
argsfile {home}/slapd.args
TLSCACertificateFile {certs}/ca.pem
TLSCertificateFile {certs}/broker.pem
TLSCertificateKeyFile {certs}/broker.pem
database mdb
maxsize 10485760
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {home}/db
access to attrs=userPassword by anonymous auth by self read by * none
access to * by users read by * none
"""


def entries(people: dict[str, str], groups: dict[str, list[str]]) -> str:
    """LDIF for the base, ``people`` (uid -> password) and ``groups`` (cn -> member uids)."""
    blocks = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Kazami tests\ndc: kazami",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups",
    ]
    for uid, password in people.items():
        blocks.append(
            f"dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid.title()}\n"
            f"givenName: {uid.title()}\nmail: {uid}@kazami.test\nuserPassword: {password}"
        )
    for cn, members in groups.items():
        lines = [f"dn: cn={cn},{GROUPS}", "objectClass: groupOfNames", f"cn: {cn}"]
        lines += [f"member: uid={m},{PEOPLE}" for m in members] or [f"member: {ROOT_DN}"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


@contextlib.contextmanager
def directory(people: dict[str, str], groups: dict[str, list[str]]) -> Iterator[Directory]:
    """slapd with ``people`` and ``groups``, started and stopped (its files removed)."""
    slapd = _slapd()
    home = Path(tempfile.mkdtemp(prefix="kazami-ldap-"))
    (home / "db").mkdir()
    certs = generate_certs(home / "certs").folder
    (home / "slapd.conf").write_text(_config(home, certs))
    port = free_port()
    url = f"ldap://127.0.0.1:{port}"
    # -d 0: in the foreground (slapd forks otherwise), its log to stderr.
    command = [slapd, "-f", str(home / "slapd.conf"), "-h", f"{url}/", "-d", "0"]
    with server_process(command, home, "slapd", lambda: _listening(port)):
        added = subprocess.run(
            ["ldapadd", "-x", "-H", url, "-D", ROOT_DN, "-w", ROOT_PASSWORD],
            input=entries(people, groups),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if added.returncode != 0:
            raise RuntimeError(f"ldapadd failed: {added.stderr[-2000:]}")
        yield Directory(url, certs / "ca.pem")


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False
