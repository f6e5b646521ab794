"""Secrets, recognised the same way everywhere: in connector configs, broker configs, the audit log's parameters
and ZooKeeper's data. Pure functions, no I/O.

A *name* is secret when, split into words at ``.``, ``_``, ``-``, spaces and camelCase, it

- contains ``password``, ``passwd``, ``passphrase``, ``secret``, ``credential``, ``jaas``, ``private``,
  ``authorization``, ``apikey``, ``accesskey`` or ``authuserinfo`` once its words are joined
  (``ssl.key.password``, ``sasl.jaas.config``, ``aws.secret.access.key``, ``basic.auth.user.info``);
- has a word ``pwd`` or ``salt`` (``db.pwd``);
- ends with the word ``token`` (``token``, ``auth.token``, ``sessionToken``), or with the word ``key`` after
  another (``ssl.keystore.key``, ``api.key``, ``accessKey``, ``stored_key``; a bare ``key``, such as a
  produced message's key, is not a secret);
- is one of the certificate settings Kafka itself treats as passwords (``ssl.keystore.certificate.chain``,
  ``ssl.truststore.certificates``, also behind a ``listener.name.<l>.`` prefix).

Look-alikes that are *not* secret: ``key.converter``, ``key.ignore``, ``keystore.type``, ``ssl.keystore.location``,
``tokens.per.second``, ``delegation.token.max.lifetime.ms``, ``sasl.oauthbearer.token.endpoint.url`` (the word
``key`` or ``token`` is not the last one).

A secret name's value is replaced whole by the mask. Any other text value keeps all but the secrets it holds:

- URL credentials: ``scheme://user:pass@host`` -> ``scheme://user:MASK@host``;
- Authorization values: ``Authorization: Bearer abc`` -> ``Authorization: Bearer MASK`` (also Basic, Digest,
  Token, ApiKey; ``Bearer``/``Basic`` followed by a token-looking word without the header name too);
- ``name=value`` pairs with a secret name (``?user=app&password=x``, a JAAS line's ``password="x"``, SCRAM's
  ``salt=...,stored_key=...,server_key=...,iterations=4096``): the value;
- JSON fields with a secret name (``{"password": "x"}``): the value, the rest of the text kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "********"

_WORD_SPLIT = re.compile(r"[._\-\s/:]+|(?<=[a-z0-9])(?=[A-Z])")
_ANYWHERE = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "credential",
    "jaas",
    "private",
    "authorization",
    "apikey",
    "accesskey",
    "authuserinfo",
)
_WORDS = frozenset({"pwd", "salt"})
_ENDINGS = (("keystore", "certificate", "chain"), ("truststore", "certificates"))

# scheme://user:password@host: the password (no /, ?, # or space in it, as in a URL).
# The password runs to the authority's last @ (an @ inside it is then hidden too).
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:]*):([^\s/?#]+)@")
# "Authorization: Bearer x" (or = x, or "authorization": "Basic x") and a bare "Bearer <token-looking word>".
_SCHEMES = frozenset({"bearer", "basic", "digest", "token", "apikey", "negotiate"})
_CREDENTIAL_CHARS = r"[A-Za-z0-9\-._~+/]+=*"
_AUTH_HEADER = re.compile(
    r"(?i)(authorization\"?\s*[:=]\s*\"?\s*(?:"
    + "|".join(sorted(_SCHEMES))
    + r")\s+)(?!\*{8})("
    + _CREDENTIAL_CHARS
    + ")"
)
_BARE_AUTH = re.compile(r"\b(Bearer\s+|Basic\s+)(?!\*{8})(" + _CREDENTIAL_CHARS + ")")
# name=value, the value plain or quoted, up to ; & , | or a space.
_PAIR = re.compile(r"(?<![\w.\-])([A-Za-z_][\w.\-]*)(\s*=\s*)(\"[^\"]*\"|'[^']*'|[^;&,|\s\"']+)")
# "name": value in JSON text (a string, a number, true or false; null hides nothing).
_JSON_FIELD = re.compile(r'"((?:[^"\\]|\\.){1,200})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d[\d.eE+\-]*|true|false)')


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


def is_secret_name(name: str) -> bool:
    """Whether a setting, field or parameter called ``name`` holds a secret (see the module's docstring)."""
    words = _words(str(name))
    if not words:
        return False
    joined = "".join(words)
    if any(part in joined for part in _ANYWHERE):
        return True
    if _WORDS.intersection(words) or words[-1] == "token" or (words[-1] == "key" and len(words) > 1):
        return True
    return any(tuple(words[-len(end) :]) == end for end in _ENDINGS)


def _looks_like_a_token(word: str) -> bool:
    """A bare ``Bearer``/``Basic`` is followed by a credential, not an English word: digits, symbols or length."""
    return len(word) >= 8 and (any(c.isdigit() or c in "-._~+/=" for c in word) or len(word) >= 20)


def redact_text(text: str, mask: str = MASK) -> str:
    """``text`` with the secrets it holds replaced by ``mask``: URL credentials, Authorization values,
    ``name=value`` pairs and JSON fields with a secret name. Text without any is returned unchanged."""

    def field(m: re.Match[str]) -> str:
        if not is_secret_name(m.group(1)) or m.group(3) == f'"{mask}"':
            return m.group(0)
        return f'"{m.group(1)}"{m.group(2)}"{mask}"'

    def pair(m: re.Match[str]) -> str:
        value = m.group(3)
        if not is_secret_name(m.group(1)) or value.strip("\"'") == mask or value.lower() in _SCHEMES:
            return m.group(0)  # an Authorization's scheme: its credential is hidden already
        quote = value[0] if value[:1] in ("'", '"') else ""
        return f"{m.group(1)}{m.group(2)}{quote}{mask}{quote}"

    def bare(m: re.Match[str]) -> str:
        return m.group(1) + mask if _looks_like_a_token(m.group(2)) else m.group(0)

    text = _JSON_FIELD.sub(field, text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + mask, text)
    text = _BARE_AUTH.sub(bare, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:{mask}@", text)
    return _PAIR.sub(pair, text)


def redact_value(name: str, value: Any, mask: str = MASK) -> Any:
    """``value`` of the setting ``name`` as it may be shown: ``mask`` for a secret name, otherwise text with
    its secrets redacted (redact_text), mappings and lists redacted inside; None stays None."""
    if value is None:
        return None
    if is_secret_name(name):
        return mask
    return redact_any(value, mask)


def redact_any(value: Any, mask: str = MASK) -> Any:
    """Any value without a name of its own: text through redact_text, mappings by their keys, lists item by item."""
    if isinstance(value, str):
        return redact_text(value, mask)
    if isinstance(value, Mapping):
        return redact_mapping(value, mask)
    if isinstance(value, list | tuple):
        return [redact_any(v, mask) for v in value]
    return value


def redact_mapping(mapping: Mapping[Any, Any], mask: str = MASK) -> dict[Any, Any]:
    """``mapping`` with every value redacted by its key (redact_value), nested mappings included."""
    return {k: redact_value(str(k), v, mask) for k, v in mapping.items()}
