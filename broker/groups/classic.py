"""Classic groups described with DescribeGroups, one request per coordinator, each member's metadata and
assignment decoded by the group's protocol type.

kafka-python's ``describe_groups`` decodes every member as a consumer whatever the group's protocol, and
fails the whole answer when a member is not one: a Kafka Connect worker's group (protocol type
``connect``) made every group page fail once a worker ran beside the cluster. Here only the members of
``consumer`` groups are decoded (others keep their bytes, which the pages do not show), and a member
that cannot be decoded is kept undecoded rather than failing the others.
"""

from __future__ import annotations

import logging
import struct
from collections import defaultdict
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from broker.client.connection import find_coordinators, send_request

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL = "consumer"


def describe_groups(admin: KafkaAdminClient, group_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``{group_id: description}`` in the shape kafka-python's describe_groups gives (``group_state``,
    ``protocol_type``, ``protocol_data``, ``members`` with ``member_assignment`` decoded for consumer
    groups, ``error``). Raises what the admin client raises for a coordinator that does not answer: the
    coordinators are asked in turn, and the first that fails stops the others being asked."""
    if not group_ids:
        return {}
    by_coordinator: dict[int, list[str]] = defaultdict(list)
    for group_id, coordinator in find_coordinators(admin, group_ids).items():
        by_coordinator[coordinator].append(group_id)
    found: dict[str, dict[str, Any]] = {}
    for coordinator, groups in by_coordinator.items():
        request = DescribeGroupsRequest(groups=groups, include_authorized_operations=False)
        found.update(read_answer(send_request(admin, request, node=coordinator)))
    return found


def read_answer(response: Any) -> dict[str, dict[str, Any]]:
    """A DescribeGroups answer as ``{group_id: description}``."""
    found: dict[str, dict[str, Any]] = {}
    for group in response.groups:
        if group.protocol_type == CONSUMER_PROTOCOL:
            for member in group.members:
                member.member_metadata = _decoded(ConsumerProtocolSubscription, member.member_metadata)
                member.member_assignment = _decoded(ConsumerProtocolAssignment, member.member_assignment)
        described = group.to_dict()
        code = described.pop("error_code", 0)
        message = described.pop("error_message", "") or ""
        described["error"] = str(kafka.errors.for_code(code)(message)) if code else None
        found[group.group_id] = described
    return found


def _decoded(kind: Any, raw: Any) -> Any:
    if not raw:
        return raw
    try:
        return kind.decode(raw)
    except (struct.error, ValueError, IndexError, TypeError):
        log.debug("a consumer group member's %s could not be decoded; kept as bytes", kind.__name__)
        return raw
