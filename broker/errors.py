"""Typed errors raised by ``broker``; the console maps each to an HTTP status and a message."""

from __future__ import annotations


class KazamiError(Exception):
    """Base of every error this project raises on purpose; its message is safe to show to a user."""


class ClusterUnavailable(KazamiError):
    """The cluster could not be reached (or did not answer) within the time-out."""


class ClusterAuthFailed(ClusterUnavailable):
    """TLS or SASL with the cluster failed: it refused the console's certificate or credentials, or the
    console refused its certificate. The message says which and never holds a secret. A
    ClusterUnavailable, so every page treats it as a cluster it cannot use."""


class UnknownCluster(KazamiError):
    """No cluster of that name is configured."""


class ConfigError(KazamiError):
    """A setting is missing or malformed."""


class NotFound(KazamiError):
    """A named thing (topic, partition, group, message) does not exist."""


class TopicNotFound(NotFound):
    """No topic of that name."""


class PartitionNotFound(NotFound):
    """The topic has no partition of that number."""


class AlreadyExists(KazamiError):
    """Creating something that is already there."""


class InvalidInput(KazamiError):
    """A value the user gave is malformed or out of range; the message says which and why."""


class KafkaRefused(KazamiError):
    """Kafka answered with an error for a valid-looking request (policy, replication factor, ...)."""


class PartitionUnavailable(KazamiError):
    """The partition has no leader right now, so it cannot be read or written."""


class NotSupported(KazamiError):
    """The cluster's mode or version does not have this (a quorum on a ZooKeeper-mode cluster, share groups
    before Kafka 4.0); the message says which mode or version brings it."""
