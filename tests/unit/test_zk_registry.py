"""What Kafka keeps in ZooKeeper, explained (broker.zk.registry), on data read from a real Kafka 3.9 cluster's
ZooKeeper (and, for the nodes that only live for a moment, the shapes Kafka 3.9 writes)."""

from __future__ import annotations

import pytest

from broker.zk.nodes import ZStat
from broker.zk.registry import Explanation, explain

BROKER_0 = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://127.0.0.1:19601"],"jmx_port":-1,"port":19601,"host":"127.0.0.1",'
    b'"version":5,"timestamp":"1795510134221"}'
)
TOPIC = (
    b'{"partitions":{"0":[0,1,2],"1":[2,0,1],"2":[1,2,0]},"topic_id":"5Wga6g-kSdGv9nkhNdCUNw",'
    b'"adding_replicas":{},"removing_replicas":{},"version":3}'
)
STATE = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,0,1]}'
CONTROLLER = b'{"version":2,"brokerid":0,"timestamp":"1795510134504","kraftControllerEpoch":-1}'
SESSION = 72059780257611789


def stat(ephemeral_owner: int | None = None, version: int = 0, modified: int = 1795510141962) -> ZStat:
    return ZStat(
        created=1795510130242,
        modified=modified,
        version=version,
        cversion=0,
        aversion=0,
        data_length=0,
        num_children=0,
        ephemeral_owner=ephemeral_owner,
        czxid=0x24,
        mzxid=0x24,
        pzxid=0x24,
    )


def rows(e: Explanation | None) -> dict[str, str]:
    assert e is not None
    assert e.problem is None, e.problem
    return {r.label: r.value for r in e.rows}


def test_a_broker_registration_gives_endpoints_rack_registration_time_and_session() -> None:
    e = explain("/brokers/ids/0", BROKER_0, stat(SESSION))
    found = rows(e)
    assert e is not None
    assert e.title == "Broker 0's registration"
    assert found["Broker"] == "0"
    assert found["Endpoint PLAINTEXT"] == "127.0.0.1:19601"
    assert found["Rack"] == "none"
    assert found["Registered at"] == "2026-11-24T08:48:54.221Z"
    assert next(r for r in e.rows if r.label == "Registered at").time_ms == 1795510134221
    assert found["Session"].startswith("0x10001fd04d9000d ")
    assert "JMX port" not in found  # -1: none


def test_a_registration_with_a_rack_and_named_listeners_says_each_protocol() -> None:
    data = (
        b'{"listener_security_protocol_map":{"CLIENT":"SASL_SSL","INTERNAL":"PLAINTEXT"},'
        b'"endpoints":["CLIENT://kafka-1.example:9093","INTERNAL://10.0.0.5:9092"],"rack":"eu-west-1a",'
        b'"jmx_port":9999,"port":9092,"host":"10.0.0.5","version":5,"timestamp":"1700000000000",'
        b'"features":{"metadata.version":{"min_version":1,"max_version":21}}}'
    )
    found = rows(explain("/brokers/ids/7", data, stat(SESSION)))
    assert found["Endpoint CLIENT (SASL_SSL)"] == "kafka-1.example:9093"
    assert found["Endpoint INTERNAL (PLAINTEXT)"] == "10.0.0.5:9092"
    assert found["Rack"] == "eu-west-1a"
    assert found["JMX port"] == "9999"
    assert found["Supports metadata.version"] == "1 to 21"


def test_the_controller_links_to_its_broker_and_says_when_it_was_elected() -> None:
    e = explain("/controller", CONTROLLER, stat(SESSION))
    found = rows(e)
    assert found["Controller"] == "broker 0"
    assert e is not None
    assert e.rows[0].znode == "/brokers/ids/0"
    assert found["Elected at"] == "2026-11-24T08:48:54.504Z"
    assert "KRaft controller epoch" not in found


def test_a_kraft_controller_holding_the_controller_node_means_a_migration() -> None:
    data = b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":5}'
    e = explain("/controller", data, stat(SESSION))
    found = rows(e)
    assert found["Controller"].startswith("KRaft controller 3000")
    assert found["KRaft controller epoch"] == "5"
    assert e is not None
    assert e.rows[0].znode is None


def test_the_controller_epoch_is_a_bare_number() -> None:
    found = rows(explain("/controller_epoch", b"1", stat()))
    assert found["Controller epoch"] == "1"
    assert "Last election" in found


def test_the_cluster_id() -> None:
    found = rows(explain("/cluster/id", b'{"version":"1","id":"wY-fmAaRQUW8F7JOIAVicA"}', stat()))
    assert found == {"Cluster id": "wY-fmAaRQUW8F7JOIAVicA"}


def test_a_topic_lists_each_partitions_replicas_with_a_link_to_its_state() -> None:
    e = explain("/brokers/topics/explore", TOPIC, stat())
    found = rows(e)
    assert found["Topic id"] == "5Wga6g-kSdGv9nkhNdCUNw"
    assert found["Partitions"] == "3"
    assert found["Partition 1"] == "replicas 2, 0, 1"
    assert e is not None
    assert next(r for r in e.rows if r.label == "Partition 2").znode == "/brokers/topics/explore/partitions/2/state"


def test_a_topic_being_reassigned_says_what_moves() -> None:
    data = b'{"partitions":{"0":[3,1,2,0]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[0]},"version":3}'
    found = rows(explain("/brokers/topics/t", data, stat()))
    assert found["Partition 0"] == "replicas 3, 1, 2, 0 (moving: adding 3, removing 0)"


def test_a_topic_with_thousands_of_partitions_lists_the_first_ones_and_counts_the_rest() -> None:
    data = ('{"partitions":{' + ",".join(f'"{p}":[0]' for p in range(1000)) + '},"version":3}').encode()
    e = explain("/brokers/topics/big", data, stat())
    found = rows(e)
    assert found["Partitions"] == "1000"
    assert found["Partition 199"] == "replicas 0"
    assert "Partition 200" not in found
    assert found["More"] == "800 more partitions not listed here"


def test_a_partition_state_gives_leader_isr_epochs_and_partition_epoch() -> None:
    e = explain("/brokers/topics/explore/partitions/1/state", STATE, stat(version=3))
    found = rows(e)
    assert e is not None
    assert e.title == "Partition explore-1: leader and ISR"
    assert found["Leader"] == "broker 2"
    assert found["In-sync replicas (ISR)"] == "2, 0, 1"
    assert found["Leader epoch"] == "0"
    assert found["Controller epoch"].startswith("1 ")
    assert found["Partition epoch"].startswith("3 ")
    leader = next(r for r in e.rows if r.label == "Leader")
    assert leader.znode == "/brokers/ids/2"


def test_an_offline_partition_has_no_leader() -> None:
    data = b'{"controller_epoch":4,"leader":-1,"version":1,"leader_epoch":7,"isr":[1],"leader_recovery_state":0}'
    found = rows(explain("/brokers/topics/t/partitions/0/state", data, stat()))
    assert found["Leader"] == "none: the partition is offline"
    assert found["Leader recovery"] == "recovered"


def test_configuration_overrides_of_each_kind_of_entity() -> None:
    found = rows(explain("/config/topics/explore", b'{"version":1,"config":{"retention.ms":"3600000"}}', stat()))
    assert found == {"For": "topic explore", "retention.ms": "3600000"}
    found = rows(explain("/config/brokers/1", b'{"version":1,"config":{"log.cleaner.threads":"2"}}', stat()))
    assert found["For"] == "broker 1"
    found = rows(explain("/config/brokers/<default>", b'{"version":1,"config":{}}', stat()))
    assert found == {"For": "every broker (the default)", "Overrides": "none: the defaults apply"}
    quota = b'{"version":1,"config":{"producer_byte_rate":"1024"}}'
    e = explain("/config/users/alice/clients/app-1", quota, stat())
    assert e is not None
    assert e.title == "Quotas of user alice, client app-1"
    assert rows(e)["producer_byte_rate"] == "1024"
    assert rows(explain("/config/users/User%3Abob", quota, stat()))["For"] == "user User:bob"


def test_a_configuration_change_notice_links_to_what_changed() -> None:
    e = explain("/config/changes/config_change_0000000001", b'{"version":2,"entity_path":"brokers/1"}', stat())
    assert rows(e)["Changed"] == "broker 1"
    assert e is not None
    assert e.rows[0].znode == "/config/brokers/1"


def test_a_legacy_reassignment_lists_each_move() -> None:
    data = b'{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2]}]}'
    e = explain("/admin/reassign_partitions", data, stat())
    assert e is not None
    assert e.rows[0].value == "foo-1 → replicas 1, 2"
    assert e.rows[0].znode == "/brokers/topics/foo/partitions/1/state"


def test_a_topic_being_deleted() -> None:
    e = explain("/admin/delete_topics/old-topic", b"", stat())
    found = rows(e)
    assert found["Topic"] == "old-topic"
    assert e is not None
    assert e.rows[0].znode == "/brokers/topics/old-topic"
    assert "Requested at" in found


def test_isr_change_and_log_dir_notifications() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":3}]}'
    e = explain("/isr_change_notification/isr_change_0000000004", data, stat())
    assert e is not None
    assert [r.value for r in e.rows[:2]] == ["t-0", "t-3"]
    found = rows(
        explain("/log_dir_event_notification/log_dir_event_0000000000", b'{"version":1,"broker":1,"event":1}', stat())
    )
    assert found == {"Broker": "1", "Event": "a log directory failed", "At": "2026-11-24T08:48:50.242Z"}


def test_a_migration_to_kraft_says_how_far_it_got() -> None:
    data = (
        b'{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":2,'
        b'"kraft_metadata_offset":1234,"kraft_metadata_epoch":5}'
    )
    found = rows(explain("/migration", data, stat()))
    assert found["KRaft controller"] == "3000"
    assert found["Metadata log offset migrated"] == "1234"


def test_features_producer_ids_and_broker_sequence() -> None:
    assert rows(explain("/feature", b'{"features":{},"version":2,"status":1}', stat())) == {
        "Versioning": "enabled",
        "Finalized features": "none",
    }
    found = rows(
        explain("/latest_producer_id_block", b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}', stat())
    )
    assert found == {"Broker": "1", "Producer ids": "0 to 999"}
    assert rows(explain("/brokers/seqid", b"", stat(version=2)))["Sequence"].startswith("2 ")


def test_containers_are_named_and_unknown_paths_are_not_explained() -> None:
    for path in ["/", "/brokers", "/brokers/ids", "/brokers/topics", "/admin/delete_topics", "/config/topics"]:
        e = explain(path, None, stat())
        assert e is not None
        assert e.rows == ()
        assert e.summary
    assert explain("/my-app/locks", b"x", stat()) is None
    assert explain("/brokers/ids/not-a-number", BROKER_0, stat()) is None


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/brokers/ids/0", b"not json"),
        ("/brokers/ids/0", b"[1, 2]"),
        ("/brokers/ids/0", b'{"version":5}'),
        ("/controller", b'{"version":2}'),
        ("/controller_epoch", b"one"),
        ("/brokers/topics/t", b'{"partitions":[1]}'),
        ("/brokers/topics/t/partitions/0/state", b'{"leader":1,"isr":"1,2"}'),
        ("/config/topics/t", b'{"config":"retention.ms=1"}'),
        ("/isr_change_notification/isr_change_0000000001", b'{"partitions":[{"topic":"t"}]}'),
        ("/brokers/ids/0", b"\xff\xfe"),
        ("/cluster/id", None),
    ],
)
def test_data_of_another_shape_is_named_as_such_never_an_error(path: str, data: bytes | None) -> None:
    e = explain(path, data, stat())
    assert e is not None
    assert e.problem is not None
    assert e.problem.startswith("This is not what Kafka writes here")
    assert e.rows == ()
