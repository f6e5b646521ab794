"""broker.groups.protocol and broker.groups.consumer_share without a cluster: each request encodes and decodes,
each response is built with its own class at the highest version and read back into kafka4's dataclasses,
answers are decoded through kafka-python's response registry, and groups are batched per coordinator."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.broker_version_data import BrokerVersionData

from broker.groups import consumer_share
from broker.groups.protocol import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)

TOPIC_ID = uuid.UUID("5c1f3b4e-9a51-4c44-8d3e-0e6b4b1f2a77")
NOT_FOUND, NOT_COORDINATOR, NON_EMPTY, UNKNOWN_TOPIC = 69, 16, 68, 3


def round_trip(message: Any) -> Any:
    """Encode at the class's highest version and decode the bytes with the same class."""
    version = type(message).max_version
    data = bytes(message.encode(version=version))
    return type(message).decode(data, version=version)


@pytest.mark.parametrize(
    ("request_class", "response_class", "api_key", "versions"),
    [
        (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, 69, (0, 1)),
        (ShareGroupDescribeRequest, ShareGroupDescribeResponse, 77, (0, 1)),  # kafka-python lowers the min to 0
        (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, 90, (0, 1)),
        (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, 91, (0, 0)),
        (DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, 92, (0, 0)),
    ],
)
def test_classes_come_from_our_schemas_and_answers_decode_through_the_registry(
    request_class: Any, response_class: Any, api_key: int, versions: tuple[int, int]
) -> None:
    assert request_class.API_KEY == response_class.API_KEY == api_key
    assert (request_class.min_version, request_class.max_version) == versions
    assert request_class.is_request()
    assert not response_class.is_request()
    header = RequestHeader(request_api_key=api_key, request_api_version=versions[1], correlation_id=7, client_id="k")
    answer_class = header.get_response_class()  # what the admin client's connection decodes an answer with
    assert answer_class[None] is response_class
    assert answer_class.__name__ == f"{response_class.__name__}_v{versions[1]}"


def test_describe_requests_encode() -> None:
    consumer = ConsumerGroupDescribeRequest(group_ids=["a", "b"], include_authorized_operations=False)
    # flexible: compact array of 2 (3), compact strings "a" and "b", the bool, no tagged fields
    assert bytes(consumer.encode(version=1)) == b"\x03\x02a\x02b\x00\x00"
    assert round_trip(consumer).group_ids == ["a", "b"]
    share = round_trip(ShareGroupDescribeRequest(group_ids=["s"], include_authorized_operations=True))
    assert (share.group_ids, share.include_authorized_operations) == (["s"], True)


def test_share_offsets_request_asks_for_every_topic_with_a_null_list() -> None:
    request_class = DescribeShareGroupOffsetsRequest
    group_class = request_class.DescribeShareGroupOffsetsRequestGroup
    request = request_class(groups=[group_class(group_id="g", topics=None)])
    assert bytes(request.encode(version=1)) == b"\x02\x02g\x00\x00\x00"  # topics: compact null (0)
    assert round_trip(request).groups[0].topics is None
    topic = group_class.DescribeShareGroupOffsetsRequestTopic(topic_name="t", partitions=[0, 2])
    decoded = round_trip(request_class(groups=[group_class(group_id="g", topics=[topic])]))
    assert [(t.topic_name, t.partitions) for t in decoded.groups[0].topics] == [("t", [0, 2])]


def test_alter_and_delete_requests_encode() -> None:
    topic_class = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
    part = topic_class.AlterShareGroupOffsetsRequestPartition(partition_index=3, start_offset=42)
    alter = round_trip(
        AlterShareGroupOffsetsRequest(group_id="g", topics=[topic_class(topic_name="t", partitions=[part])])
    )
    assert alter.group_id == "g"
    assert [(t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions]) for t in alter.topics] == [
        ("t", [(3, 42)])
    ]
    delete_topic = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
    delete = round_trip(DeleteShareGroupOffsetsRequest(group_id="g", topics=[delete_topic(topic_name="t")]))
    assert (delete.group_id, [t.topic_name for t in delete.topics]) == ("g", ["t"])


def assignment(struct: Any, *pairs: tuple[str, list[int]]) -> Any:
    tp = struct.TopicPartitions
    return struct(topic_partitions=[tp(topic_id=TOPIC_ID, topic_name=n, partitions=ps) for n, ps in pairs])


def test_consumer_group_describe_response_reads_into_descriptions() -> None:
    group_class = ConsumerGroupDescribeResponse.DescribedGroup
    member_class = group_class.Member
    member = member_class(
        member_id="m-1",
        instance_id="static-1",
        rack_id=None,
        member_epoch=4,
        client_id="c",
        client_host="/10.0.0.5",
        subscribed_topic_names=["t", "a"],
        subscribed_topic_regex="",
        assignment=assignment(member_class.Assignment, ("t", [2, 0]), ("a", [1])),
        target_assignment=assignment(member_class.Assignment, ("t", [0])),
        member_type=1,
    )
    described = group_class(
        error_code=0,
        group_id="g",
        group_state="Reconciling",
        group_epoch=5,
        assignment_epoch=4,
        assignor_name="uniform",
        members=[member],
    )
    missing = group_class(error_code=NOT_FOUND, error_message="Group x not found.", group_id="x", members=[])
    classic = group_class(error_code=NOT_FOUND, error_message="Group c is not a consumer group.", group_id="c")
    response = round_trip(ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=[described, missing, classic]))

    read = {g.group_id: consumer_share.read_consumer_group(g.group_id, g.error_code, g) for g in response.groups}
    assert read["g"] == consumer_share.ConsumerGroupDescription(
        group_id="g",
        error=None,
        state="Reconciling",
        group_epoch=5,
        assignment_epoch=4,
        assignor="uniform",
        members=(
            consumer_share.ConsumerGroupMember(
                member_id="m-1",
                instance_id="static-1",
                rack_id=None,
                member_epoch=4,
                client_id="c",
                client_host="/10.0.0.5",
                subscribed_topics=("a", "t"),
                subscribed_regex=None,
                assignment=(("a", 1), ("t", 0), ("t", 2)),
                target_assignment=(("t", 0),),
                member_type="consumer",
            ),
        ),
    )
    assert read["x"].error == "not found (Group x not found.)"
    assert read["x"].members == ()
    assert read["c"].error == "a group of another type, not a KIP-848 consumer group"


def test_share_group_describe_response_reads_into_descriptions() -> None:
    group_class = ShareGroupDescribeResponse.DescribedGroup
    member_class = group_class.Member
    member = member_class(
        member_id="s-1",
        rack_id="r1",
        member_epoch=3,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=["t"],
        assignment=assignment(member_class.Assignment, ("t", [1, 0])),
    )
    described = group_class(
        group_id="s", group_state="Stable", group_epoch=3, assignment_epoch=3, assignor_name="simple", members=[member]
    )
    other = group_class(error_code=NOT_FOUND, error_message="Group g is not a share group.", group_id="g")
    response = round_trip(ShareGroupDescribeResponse(throttle_time_ms=0, groups=[described, other]))
    first, second = (consumer_share.read_share_group(g.group_id, g.error_code, g) for g in response.groups)
    assert first == consumer_share.ShareGroupDescription(
        "s",
        None,
        "Stable",
        3,
        3,
        "simple",
        (consumer_share.ShareGroupMember("s-1", "r1", 3, "c", "/127.0.0.1", ("t",), (("t", 0), ("t", 1))),),
    )
    assert second.error == "a group of another type, not a share group"


def test_share_group_offsets_response_reads_start_offsets_and_lag() -> None:
    group_class = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
    topic_class = group_class.DescribeShareGroupOffsetsResponseTopic
    part = topic_class.DescribeShareGroupOffsetsResponsePartition
    partitions = [
        part(partition_index=1, start_offset=50, leader_epoch=0, lag=7, error_code=0),
        part(partition_index=0, start_offset=-1, leader_epoch=0, lag=-1, error_code=0),
        part(partition_index=2, start_offset=-1, leader_epoch=-1, lag=-1, error_code=UNKNOWN_TOPIC),
    ]
    ok = group_class(group_id="s", topics=[topic_class(topic_name="t", topic_id=TOPIC_ID, partitions=partitions)])
    missing = group_class(group_id="x", topics=[], error_code=NOT_FOUND, error_message="Group x not found.")
    response = round_trip(DescribeShareGroupOffsetsResponse(throttle_time_ms=0, groups=[ok, missing]))
    first, second = (consumer_share.read_share_offsets(g.error_code, g) for g in response.groups)
    assert first == consumer_share.ShareGroupOffsets(
        None,
        {
            ("t", 0): consumer_share.ShareOffset(None, None, None),
            ("t", 1): consumer_share.ShareOffset(50, 0, 7),
            ("t", 2): consumer_share.ShareOffset(None, None, None, "unknown topic or partition"),
        },
    )
    assert list(first.partitions) == [("t", 0), ("t", 1), ("t", 2)]
    assert second == consumer_share.ShareGroupOffsets("not found (Group x not found.)", {})


def test_alter_share_group_offsets_response_gives_each_partition_its_error() -> None:
    topic_class = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
    part = topic_class.AlterShareGroupOffsetsResponsePartition
    topic = topic_class(
        topic_name="t",
        topic_id=TOPIC_ID,
        partitions=[part(partition_index=0, error_code=0), part(partition_index=9, error_code=UNKNOWN_TOPIC)],
    )
    answer = round_trip(AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, responses=[topic]))
    asked = [("t", 0), ("t", 9), ("u", 0)]
    assert consumer_share.read_altered(asked, answer.error_code, answer) == {
        ("t", 0): None,
        ("t", 9): "unknown topic or partition",
        ("u", 0): "the group coordinator did not answer for it",
    }
    busy = round_trip(
        AlterShareGroupOffsetsResponse(error_code=NON_EMPTY, error_message="The group is not empty.", responses=[])
    )
    assert consumer_share.read_altered([("t", 0)], busy.error_code, busy) == {
        ("t", 0): "the group still has members; stop them first (The group is not empty.)"
    }


def test_delete_share_group_offsets_response_gives_each_topic_its_error() -> None:
    topic_class = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
    topics = [
        topic_class(topic_name="t", topic_id=TOPIC_ID, error_code=0),
        topic_class(topic_name="u", topic_id=uuid.UUID(int=0), error_code=UNKNOWN_TOPIC, error_message="No such."),
    ]
    answer = round_trip(DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, responses=topics))
    assert consumer_share.read_deleted(["u", "t"], answer.error_code, answer) == {
        "t": None,
        "u": "unknown topic or partition (No such.)",
    }
    other = round_trip(
        DeleteShareGroupOffsetsResponse(error_code=NOT_FOUND, error_message="Group g is not a share group.")
    )
    assert consumer_share.read_deleted(["t"], other.error_code, other) == {
        "t": "a group of another type, not a share group"
    }


def test_groups_are_batched_one_request_per_coordinator() -> None:
    coordinators = {"a": 1, "b": 2, "c": 1, "d": 3, "e": 2}
    assert consumer_share.by_coordinator(coordinators) == {1: ["a", "c"], 2: ["b", "e"], 3: ["d"]}
    assert consumer_share.by_coordinator({}) == {}


def test_a_group_error_that_is_not_kafkas_reads_as_such() -> None:
    assert consumer_share.read_consumer_group("g", NOT_COORDINATOR, None).error == (
        "the group moved to another coordinator; try again"
    )
    assert consumer_share.read_share_group("g", consumer_share._NO_ANSWER, None).error == (
        "the group coordinator did not answer for this group"
    )
    assert consumer_share.read_share_group("g", 9999, None).error == "error 9999"  # a code kafka-python does not know
    assert consumer_share.read_share_group("g", -1, None).error == "unknown server error"


def test_a_cluster_without_the_request_is_not_supported() -> None:
    kafka39 = BrokerVersionData(api_versions={18: (0, 4), 10: (0, 6)})  # no share group APIs
    with pytest.raises(
        consumer_share.NotSupportedByCluster, match=r"do not describe share groups \(ShareGroupDescribe"
    ):
        consumer_share.check_supported(kafka39, ShareGroupDescribeRequest)
    kafka43 = BrokerVersionData(api_versions={18: (0, 4), 69: (0, 1), 77: (1, 1), 90: (0, 1)})
    for request_class in (ConsumerGroupDescribeRequest, ShareGroupDescribeRequest, DescribeShareGroupOffsetsRequest):
        consumer_share.check_supported(kafka43, request_class)
    assert kafka43.api_version(ShareGroupDescribeRequest) == 1
    consumer_share.check_supported(None, AlterShareGroupOffsetsRequest)  # versions not known yet: the send will tell
