"""Typed errors raised by ``broker``; the console maps each to an HTTP status and a message."""

from __future__ import annotations


class KazamiError(Exception):
    """Base of every error this project raises on purpose; its message is safe to show to a user."""


class ClusterUnavailable(KazamiError):
    """The cluster could not be reached (or did not answer) within the time-out."""


class UnknownCluster(KazamiError):
    """No cluster of that name is configured."""


class ConfigError(KazamiError):
    """A setting is missing or malformed."""
