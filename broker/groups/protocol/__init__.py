"""Kafka 4 group requests that kafka-python 3.0.12 does not define: KIP-848 consumer groups and KIP-932
share groups (describe them, and read, set or delete a share group's start offsets).

kafka-python builds each class from the JSON schema of the same name in this folder (Kafka's own message
definitions, as Apache Kafka 4.3.0 has them). Building a response class registers it by API key, so the
answers broker.client.connection's send_request and send_requests get are decoded once this module is
imported.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage


def _message(name: str) -> Any:
    """The kafka-python message class read from ``<name>.json`` in this package."""
    attrs = {"__module__": __name__, "__qualname__": name}
    return type(ApiMessage)(name, (ApiMessage,), attrs, load_json=__name__)


# KIP-848: api key 69.
ConsumerGroupDescribeRequest = _message("ConsumerGroupDescribeRequest")
ConsumerGroupDescribeResponse = _message("ConsumerGroupDescribeResponse")
# KIP-932: api keys 77, 90, 91 and 92.
ShareGroupDescribeRequest = _message("ShareGroupDescribeRequest")
ShareGroupDescribeResponse = _message("ShareGroupDescribeResponse")
DescribeShareGroupOffsetsRequest = _message("DescribeShareGroupOffsetsRequest")
DescribeShareGroupOffsetsResponse = _message("DescribeShareGroupOffsetsResponse")
AlterShareGroupOffsetsRequest = _message("AlterShareGroupOffsetsRequest")
AlterShareGroupOffsetsResponse = _message("AlterShareGroupOffsetsResponse")
DeleteShareGroupOffsetsRequest = _message("DeleteShareGroupOffsetsRequest")
DeleteShareGroupOffsetsResponse = _message("DeleteShareGroupOffsetsResponse")

__all__ = [
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
]
