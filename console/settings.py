"""Django settings, read strictly from the environment with safe local defaults.

Every variable is listed in docs/settings.md (or on the page it links to). A bad value stops
the console at start with one line naming the variable.
"""

from __future__ import annotations

import inspect
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from asgiref.sync import ThreadSensitiveContext

from broker.errors import ConfigError
from broker.messages.masking import load_rules
from console.config.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("KAZAMI_VAR_DIR", str(BASE_DIR / "var")))


def _secret_key() -> str:
    """KAZAMI_SECRET_KEY, or a key generated once and kept in var/ for a local console."""
    key = env_str("KAZAMI_SECRET_KEY", "")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


# SQLite shared by several processes (console workers, analytics jobs, the live query): a transaction takes
# the write lock when it begins (a deferred one that read first and then writes fails at once with
# "database is locked" while another process writes, whatever the time-out), a writer waits up to 20 s
# for another, and readers do not block the writer (write-ahead log).
SQLITE_OPTIONS = {"transaction_mode": "IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}
# A thread keeps its SQLite connection for this many seconds rather than opening and closing one per request
# (~1 ms of CPU each time: the file opened, the write-ahead log's index mapped, Django's functions registered;
# a tenth of a page of messages). HTTP requests run on a fixed set of threads (console.asgi.RequestThreads:
# asgiref >= 3.13), so a process keeps at most that many; with an older asgiref, Django starts a thread per
# request and connections are not kept.
SQLITE_CONN_MAX_AGE = 60 if "executor" in inspect.signature(ThreadSensitiveContext).parameters else 0


def _owner_only(database: Path) -> Path:
    """The SQLite file (created empty when missing, which SQLite takes for a new database) and its journal
    files readable by this user only: it holds password hashes and sessions, and the embedded Connect
    worker runs as another user on the same machine."""
    if not database.parent.is_dir():
        return database  # Django says so when it connects
    database.touch(mode=0o600, exist_ok=True)
    for path in (database, *(database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
        if path.exists():
            path.chmod(0o600)
    return database


def _database(url: str) -> dict[str, Any]:
    """DATABASE_URL as Django wants it: sqlite:///path or postgres://user:pass@host:port/name."""
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        default = _owner_only(VAR_DIR / "kazami.sqlite3")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": default,
            "OPTIONS": SQLITE_OPTIONS,
            "CONN_MAX_AGE": SQLITE_CONN_MAX_AGE,
        }
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        name: Path | str = _owner_only(Path(parsed.path)) if parsed.path not in ("", ":memory:") else ":memory:"
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": SQLITE_OPTIONS,
            "CONN_MAX_AGE": SQLITE_CONN_MAX_AGE,
        }
    if parsed.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parsed.path.lstrip("/"),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
        }
    raise ConfigError(f"DATABASE_URL: scheme {parsed.scheme!r} is not sqlite or postgres.")


def _channel_layer(url: str) -> dict[str, Any]:
    if not url:
        return {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    if not url.startswith(("redis://", "rediss://")):
        raise ConfigError(f"REDIS_URL: expected redis://host:port/db, got {url!r}.")
    return {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}


SECRET_KEY = _secret_key()
DEBUG = env_bool("KAZAMI_DEBUG", False)
ALLOWED_HOSTS = env_list("KAZAMI_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("KAZAMI_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "console.apps.ConsoleConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.access.AccessMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "console.security.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "console.urls"
ASGI_APPLICATION = "console.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.present.navigation.navigation",
                "console.access.abilities",
            ],
        },
    },
]

DATABASES = {"default": _database(env_str("DATABASE_URL", ""))}
CHANNEL_LAYERS = {"default": _channel_layer(env_str("REDIS_URL", ""))}
# Shared by every console process (console.serve runs several): the failed-login counts. The table is
# made by migration console.0004.
CACHE_TABLE = "kazami_cache"
CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": CACHE_TABLE}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
# Front-end libraries come from npm (package.json); only their dist folders are served.
_NODE = BASE_DIR / "node_modules"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/htmx", _NODE / "htmx.org" / "dist"),
    ("vendor/htmx-ext-ws", _NODE / "htmx-ext-ws" / "dist"),
    ("vendor/chart.js", _NODE / "chart.js" / "dist"),
]

# Who may do what (console/access.py): everything needs a login unless anonymous reading is on.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"
# Single sign-on with an OpenID Connect provider (console/identity/oidc.py): on when an issuer is set.
# Who signs people in, in order; Django's own backend (local accounts) comes last.
_sign_in_backends: list[str] = []
KAZAMI_OIDC_ISSUER = env_str("KAZAMI_OIDC_ISSUER", "").rstrip("/")
KAZAMI_OIDC_CLIENT_ID = env_str("KAZAMI_OIDC_CLIENT_ID", "")
KAZAMI_OIDC_CLIENT_SECRET = env_str("KAZAMI_OIDC_CLIENT_SECRET", "")
KAZAMI_OIDC_SCOPES = env_str("KAZAMI_OIDC_SCOPES", "openid email profile")
KAZAMI_OIDC_USERNAME_CLAIM = env_str("KAZAMI_OIDC_USERNAME_CLAIM", "preferred_username")
KAZAMI_OIDC_ROLES_CLAIM = env_str("KAZAMI_OIDC_ROLES_CLAIM", "groups")
KAZAMI_OIDC_ROLE_MAP = env_str("KAZAMI_OIDC_ROLE_MAP", "")
KAZAMI_OIDC_ONLY = env_bool("KAZAMI_OIDC_ONLY", False)
KAZAMI_OIDC_LOCAL_USERS = env_list("KAZAMI_OIDC_LOCAL_USERS", [])
KAZAMI_OIDC_NAME = env_str("KAZAMI_OIDC_NAME", "single sign-on")  # the login page's "Sign in with ..." button
if KAZAMI_OIDC_ISSUER:
    if not KAZAMI_OIDC_CLIENT_ID:
        raise ConfigError("KAZAMI_OIDC_ISSUER is set: KAZAMI_OIDC_CLIENT_ID must be too.")
    from console.identity.roles import parse_role_map

    try:
        parse_role_map(KAZAMI_OIDC_ROLE_MAP)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _sign_in_backends.append("console.identity.oidc.Backend")
# LDAP sign-in through the login form (console/identity/ldap.py): on when a URL is set.
KAZAMI_LDAP_URL = env_str("KAZAMI_LDAP_URL", "")
KAZAMI_LDAP_START_TLS = env_bool("KAZAMI_LDAP_START_TLS", False)
KAZAMI_LDAP_CA_FILE = env_str("KAZAMI_LDAP_CA_FILE", "")
KAZAMI_LDAP_USER_BASE = env_str("KAZAMI_LDAP_USER_BASE", "")
KAZAMI_LDAP_USER_ATTRIBUTE = env_str("KAZAMI_LDAP_USER_ATTRIBUTE", "uid")
KAZAMI_LDAP_GROUP_BASE = env_str("KAZAMI_LDAP_GROUP_BASE", "")
KAZAMI_LDAP_ROLE_MAP = env_str("KAZAMI_LDAP_ROLE_MAP", "")
if KAZAMI_LDAP_URL:
    import ssl

    import ldap3

    from console.identity.roles import parse_role_map

    if not KAZAMI_LDAP_URL.startswith(("ldap://", "ldaps://")):
        raise ConfigError(f"KAZAMI_LDAP_URL: expected ldap://host:port or ldaps://host:port, got {KAZAMI_LDAP_URL!r}.")
    if not (KAZAMI_LDAP_USER_BASE and KAZAMI_LDAP_GROUP_BASE):
        raise ConfigError("KAZAMI_LDAP_URL is set: KAZAMI_LDAP_USER_BASE and KAZAMI_LDAP_GROUP_BASE must be too.")
    try:
        parse_role_map(KAZAMI_LDAP_ROLE_MAP)
    except ValueError as exc:
        raise ConfigError(str(exc).replace("KAZAMI_OIDC_ROLE_MAP", "KAZAMI_LDAP_ROLE_MAP")) from None
    _sign_in_backends.append("console.identity.ldap.Backend")
    _ldap_tls = {
        "validate": ssl.CERT_REQUIRED,
        **({"ca_certs_file": KAZAMI_LDAP_CA_FILE} if KAZAMI_LDAP_CA_FILE else {}),
    }
    LDAP_AUTH_URL = [KAZAMI_LDAP_URL]
    LDAP_AUTH_USE_TLS = KAZAMI_LDAP_START_TLS
    LDAP_AUTH_TLS_ARGS = _ldap_tls
    LDAP_AUTH_CONNECT_USE_SSL = KAZAMI_LDAP_URL.startswith("ldaps://")
    LDAP_AUTH_CONNECT_ARGS = {"tls": ldap3.Tls(**_ldap_tls)} if LDAP_AUTH_CONNECT_USE_SSL else {}
    LDAP_AUTH_SEARCH_BASE = KAZAMI_LDAP_USER_BASE
    LDAP_AUTH_OBJECT_CLASS = "*"
    LDAP_AUTH_USER_FIELDS = {
        "username": KAZAMI_LDAP_USER_ATTRIBUTE,
        "email": "mail",
        "first_name": "givenName",
        "last_name": "sn",
    }
    LDAP_AUTH_USER_LOOKUP_FIELDS = ("username",)
    LDAP_AUTH_FORMAT_USERNAME = "console.identity.ldap.bind_dn"
    LDAP_AUTH_SYNC_USER_RELATIONS = "console.identity.ldap.sync_roles"
    LDAP_AUTH_CONNECT_TIMEOUT = 10
    LDAP_AUTH_RECEIVE_TIMEOUT = 10
AUTHENTICATION_BACKENDS = [*_sign_in_backends, "django.contrib.auth.backends.ModelBackend"]
OIDC_RP_CLIENT_ID = KAZAMI_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = KAZAMI_OIDC_CLIENT_SECRET
OIDC_RP_SCOPES = KAZAMI_OIDC_SCOPES
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # for the provider's end-session endpoint (logging out there too)
OIDC_TIMEOUT = 10
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc-callback"
OIDC_OP_LOGOUT_URL_METHOD = "console.identity.oidc.logout_url"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=refused"
CSRF_FAILURE_VIEW = "console.errors.csrf_failure"
KAZAMI_ANONYMOUS_READ = env_bool("KAZAMI_ANONYMOUS_READ", False)
# A bearer token Prometheus may use for /metrics instead of a login (empty: login only).
KAZAMI_METRICS_TOKEN = env_str("KAZAMI_METRICS_TOKEN", "")
# Behind HTTPS: cookies only over TLS.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("KAZAMI_SECURE_COOKIES", False)
SESSION_COOKIE_HTTPONLY = CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# How often live pages are refreshed over the websocket, in seconds.
KAZAMI_LIVE_INTERVAL = env_float("KAZAMI_LIVE_INTERVAL", 3.0, minimum=0.2)
# How often an open websocket's session is checked again (a logout or a lost role closes it), in seconds.
KAZAMI_WS_RECHECK = env_float("KAZAMI_WS_RECHECK", 30.0, minimum=0.2)
# Failed logins (console/views/access.py): how long a locked name or address waits after its last failure, and
# how many failures one address (REMOTE_ADDR: behind a proxy, the proxy's) may make in that time (0: no limit).
KAZAMI_LOGIN_LOCK_SECONDS = env_int("KAZAMI_LOGIN_LOCK_SECONDS", 15 * 60, minimum=1)
KAZAMI_LOGIN_ADDRESS_FAILURES = env_int("KAZAMI_LOGIN_ADDRESS_FAILURES", 50, minimum=0)
# Every password the console sets (the Users page, manage.py add_user) must pass these.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Lag history: sampled every interval by one console process, kept for the retention.
KAZAMI_LAG_SAMPLER = env_bool("KAZAMI_LAG_SAMPLER", True)
KAZAMI_LAG_SAMPLE_INTERVAL = env_float("KAZAMI_LAG_SAMPLE_INTERVAL", 10.0, minimum=0.5)
# The replication watch: how often it compares the clusters' replication (one process, the sampler's
# lease holder), and how long its event timeline is kept.
KAZAMI_REPLICATION_INTERVAL = env_float("KAZAMI_REPLICATION_INTERVAL", 2.0, minimum=0.5)
KAZAMI_EVENT_RETENTION_HOURS = env_float("KAZAMI_EVENT_RETENTION_HOURS", 72.0, minimum=0.1)
# The data folder of the embedded cluster behind the default cluster (`make run` sets it): admins may then
# stop and start its brokers from the replication page.
KAZAMI_EMBEDDED_CLUSTER = env_str("KAZAMI_EMBEDDED_CLUSTER", "")
KAZAMI_LAG_RETENTION_HOURS = env_float("KAZAMI_LAG_RETENTION_HOURS", 24.0, minimum=0.1)
# Alerts (console/background/alerts.py): evaluated by the sampler's lease holder every interval. Webhooks on
# internal addresses are refused unless allowed here: "loopback" (what `make run` sets, for its demo) or "all".
KAZAMI_ALERT_PRIVATE_TARGETS = env_str("KAZAMI_ALERT_PRIVATE_TARGETS", "")
if KAZAMI_ALERT_PRIVATE_TARGETS not in ("", "loopback", "all"):
    raise ConfigError("KAZAMI_ALERT_PRIVATE_TARGETS is empty, loopback or all.")
# A delivery that fails is tried again after 5 s, 10 s, 20 s, ... up to this many attempts in all.
KAZAMI_ALERT_ATTEMPTS = env_int("KAZAMI_ALERT_ATTEMPTS", 6, minimum=1)
# The mail server of alerts by email (its credentials are settings, never kept in the database or the audit log).
KAZAMI_SMTP_HOST = env_str("KAZAMI_SMTP_HOST", "")
KAZAMI_SMTP_PORT = env_int("KAZAMI_SMTP_PORT", 25, minimum=1)
KAZAMI_SMTP_TLS = env_str("KAZAMI_SMTP_TLS", "")
if KAZAMI_SMTP_TLS not in ("", "starttls", "ssl"):
    raise ConfigError("KAZAMI_SMTP_TLS is empty, starttls or ssl.")
KAZAMI_SMTP_USER = env_str("KAZAMI_SMTP_USER", "")
KAZAMI_SMTP_PASSWORD = env_str("KAZAMI_SMTP_PASSWORD", "")
KAZAMI_SMTP_FROM = env_str("KAZAMI_SMTP_FROM", "kazami@localhost")
# The address of the console in an alert's link (e.g. https://kazami.example.com); no link when empty.
KAZAMI_PUBLIC_URL = env_str("KAZAMI_PUBLIC_URL", "")
# Lag status (Burrow's rules): samples in a window, and the lag that still counts as caught up.
KAZAMI_LAG_WINDOW = env_int("KAZAMI_LAG_WINDOW", 10, minimum=2)
KAZAMI_LAG_ALLOWED = env_int("KAZAMI_LAG_ALLOWED", 0, minimum=0)
# Judge groups over their own commits, read from the offsets topic (as Burrow does), where the console may read it.
KAZAMI_LAG_FROM_COMMITS = env_bool("KAZAMI_LAG_FROM_COMMITS", True)
# Analytics jobs (Spark): where they run, how big the driver is, how many run at once (the rest wait),
# and how many buckets a report may draw.
KAZAMI_SPARK_MASTER = env_str("KAZAMI_SPARK_MASTER", "local[*]")
KAZAMI_SPARK_DRIVER_MEMORY = env_str("KAZAMI_SPARK_DRIVER_MEMORY", "1g")
KAZAMI_SPARK_SHUFFLE_PARTITIONS = env_int("KAZAMI_SPARK_SHUFFLE_PARTITIONS", 4, minimum=1)
KAZAMI_SPARK_UI = env_bool("KAZAMI_SPARK_UI", True)
# On a Spark cluster, the address its executors reach this console's driver at (its host name there).
KAZAMI_SPARK_DRIVER_HOST = env_str("KAZAMI_SPARK_DRIVER_HOST", "")
# The warm Spark the jobs run in: a Spark Connect server (`make run` starts one: analytics/server.py), as
# sc://host:port/;token=SECRET. Empty: each job starts a Spark of its own (KAZAMI_SPARK_MASTER above).
KAZAMI_SPARK_REMOTE = env_str("KAZAMI_SPARK_REMOTE", "")
# That server's web UI, linked from each job (empty: no link).
KAZAMI_SPARK_UI_URL = env_str("KAZAMI_SPARK_UI_URL", "")
KAZAMI_ANALYTICS_MAX_JOBS = env_int("KAZAMI_ANALYTICS_MAX_JOBS", 1, minimum=1)
# SQL over topics: the most rows a query's result keeps, and the most seconds it may run.
KAZAMI_SQL_MAX_ROWS = env_int("KAZAMI_SQL_MAX_ROWS", 10_000, minimum=1)
KAZAMI_SQL_TIMEOUT = env_float("KAZAMI_SQL_TIMEOUT", 300.0, minimum=1.0)
KAZAMI_ANALYTICS_MAX_POINTS = env_int("KAZAMI_ANALYTICS_MAX_POINTS", 2000, minimum=10)
# Live mode: the topic its figures are also written to (empty: none), and how long figures are kept.
KAZAMI_ANALYTICS_LIVE_TOPIC = env_str("KAZAMI_ANALYTICS_LIVE_TOPIC", "kazami.analytics.live")
KAZAMI_ANALYTICS_LIVE_HOURS = env_float("KAZAMI_ANALYTICS_LIVE_HOURS", 24.0, minimum=0.1)
# Every search's budget (console/live/search.py): the most it may take in seconds, the most its filter's regular
# expressions may take summed over the whole scan, and how many searches one user may run at once per process.
KAZAMI_SEARCH_MAX_SECONDS = env_float("KAZAMI_SEARCH_MAX_SECONDS", 120.0, minimum=0.1)
KAZAMI_SEARCH_REGEX_SECONDS = env_float("KAZAMI_SEARCH_REGEX_SECONDS", 10.0, minimum=0.01)
KAZAMI_SEARCH_PER_USER = env_int("KAZAMI_SEARCH_PER_USER", 2, minimum=1)
# Data masking (broker/messages/masking.py): KAZAMI_MASKING, a JSON list of rules, and the clusters file's
# [[clusters.<name>.masking]] tables. A bad rule stops the console at start.
KAZAMI_MASKING = load_rules(
    env_str("KAZAMI_MASKING", ""), env_str("KAZAMI_CLUSTERS_FILE", ""), env_str("KAZAMI_CLUSTER_NAME", "local")
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("KAZAMI_LOG_LEVEL", "INFO")},
    "loggers": {"kafka": {"level": "ERROR"}, "kazoo": {"level": "WARNING"}},
}
