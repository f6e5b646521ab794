"""broker.segments.decoders: kafka-dump-log's --offsets-decoder and --transaction-log-decoder, checked
against what Kafka 3.9.1's own tool printed for the same records.

Every row of the tables is one record: its key and value bytes (hex; ``None`` for a null value) and the
two strings ``kafka.tools.DumpLogSegments`` (the 3.9.1 jars in broker/local/jars) printed after ``key:`` and
``payload:`` for it, ``None`` where it printed nothing. The rows marked "from a cluster" are records
copied from the segments of local clusters (group metadata and offset commits written by the Java and
kafka-python consumers of the dev and bench clusters, transactions of the dev16 cluster); the others were
encoded by hand, written into a segment and dumped with the tool, to reach versions, record types and
damage those clusters never wrote. Records where the tool dies instead of printing a line are checked
against the sentences the module documents for them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from broker.segments.decoders import offsets_key_payload, scala_hash_set_order, transaction_key_payload
from broker.segments.protocol import java_utf8

OFFSETS = [
    (
        "offset commit (v3, from a cluster)",
        0,
        "0001001362656e63682d706572662d6534363430643438002262656e63682d616e616c79746963732d31306d2d323032363131323430323538323900000004",
        "000300000000001a01aa000000000000000001a20b84b10e",
        '{"type":"1","data":{"group":"bench-perf-e4640d48","topic":"bench-analytics-10m-20261124025829","partition":4}}',
        '{"version":"3","data":{"offset":1704362,"leaderEpoch":0,"metadata":"","commitTimestamp":1795489575182}}',
    ),
    (
        "group metadata, Java consumer: v3 subscription and assignment",
        1,
        "0002001362656e63682d706572662d6534363430643438",
        "00030008636f6e73756d657200000001000572616e67650039706572662d636f6e73756d65722d636c69656e742d34663438663933322d663766372d343865372d613965302d333236363965383037643139000001a20b849f5d000000010039706572662d636f6e73756d65722d636c69656e742d34663438663933322d663766372d343865372d613965302d333236363965383037643139ffff0014706572662d636f6e73756d65722d636c69656e74000a2f3132372e302e302e31000493e00000afc800000038000300000001002262656e63682d616e616c79746963732d31306d2d3230323631313234303235383239ffffffff00000000ffffffffffff0000004a000300000001002262656e63682d616e616c79746963732d31306d2d323032363131323430323538323900000006000000000000000100000002000000030000000400000005ffffffff",
        '{"type":"2","data":{"group":"bench-perf-e4640d48"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range","leader":"perf-consumer-client-4f48f932-f7f7-48e7-a9e0-32669e807d19","currentStateTimestamp":1795489570653,"members":[{"memberId":"perf-consumer-client-4f48f932-f7f7-48e7-a9e0-32669e807d19","groupInstanceId":null,"clientId":"perf-consumer-client","clientHost":"/127.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":["bench-analytics-10m-20261124025829"],"userData":null,"ownedPartitions":[],"generationId":-1,"rackId":null},"assignment":{"assignedPartitions":[{"topic":"bench-analytics-10m-20261124025829","partitions":[0,1,2,3,4,5]}],"userData":null}}]}}',
    ),
    (
        "group metadata, two kafka-python members: v0 subscriptions",
        2,
        "0002000c7461736b2d776f726b657273",
        "00030008636f6e73756d657200000002000572616e6765002d776f726b65722d312d38356138636664652d336364342d343861662d613637662d313431376466666661633931000001a20af9e23b00000002002d776f726b65722d312d38356138636664652d336364342d343861662d613637662d313431376466666661633931ffff0008776f726b65722d31000a2f3132372e302e302e31000493e00000afc80000001100000000000100057461736b73000000000000001900000000000100057461736b73000000010000000000000000002d776f726b65722d322d65316262336266652d313139632d343333652d383539302d313230336239336239633730ffff0008776f726b65722d32000a2f3132372e302e302e31000493e00000afc80000001100000000000100057461736b73000000000000001900000000000100057461736b73000000010000000100000000",
        '{"type":"2","data":{"group":"task-workers"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":2,"protocol":"range","leader":"worker-1-85a8cfde-3cd4-48af-a67f-1417dfffac91","currentStateTimestamp":1795480478267,"members":[{"memberId":"worker-1-85a8cfde-3cd4-48af-a67f-1417dfffac91","groupInstanceId":null,"clientId":"worker-1","clientHost":"/127.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":["tasks"],"userData":""},"assignment":{"assignedPartitions":[{"topic":"tasks","partitions":[0]}],"userData":""}},{"memberId":"worker-2-e1bb3bfe-119c-433e-8590-1203b93b9c70","groupInstanceId":null,"clientId":"worker-2","clientHost":"/127.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":["tasks"],"userData":""},"assignment":{"assignedPartitions":[{"topic":"tasks","partitions":[1]}],"userData":""}}]}}',
    ),
    (
        "group metadata with no members, after the last left",
        3,
        "0002001362656e63682d706572662d6534363430643438",
        "00030008636f6e73756d657200000002ffffffff000001a20b84b12500000000",
        '{"type":"2","data":{"group":"bench-perf-e4640d48"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":2,"protocol":null,"leader":null,"currentStateTimestamp":1795489575205,"members":[]}}',
    ),
    (
        "offset tombstone",
        4,
        "0001001362656e63682d706572662d6534363430643438002262656e63682d616e616c79746963732d31306d2d323032363131323430323538323900000002",
        None,
        '{"type":"1","data":{"group":"bench-perf-e4640d48","topic":"bench-analytics-10m-20261124025829","partition":2}}',
        "<DELETE>",
    ),
    (
        "group metadata tombstone",
        5,
        "0002001362656e63682d706572662d6534363430643438",
        None,
        '{"type":"2","data":{"group":"bench-perf-e4640d48"}}',
        "<DELETE>",
    ),
    (
        "offset commit v0",
        6,
        "000000016700017400000000",
        "0000000000000000002a00046d6574610000018bcfe56800",
        '{"type":"0","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"0","data":{"offset":42,"metadata":"meta","commitTimestamp":1700000000000}}',
    ),
    (
        "offset commit v1 with an expire timestamp",
        7,
        "000100016700017400000000",
        "0001000000000000002a00000000018bcfe568000000018bcfee8fc0",
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"1","data":{"offset":42,"metadata":"","commitTimestamp":1700000000000,"expireTimestamp":1700000600000}}',
    ),
    (
        "offset commit v4 (flexible) with an unknown tagged field",
        8,
        "000100016700017400000000",
        "0004000000000000002a00000003026d0000018bcfe568000107020102",
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"4","data":{"offset":42,"leaderEpoch":3,"metadata":"m","commitTimestamp":1700000000000}}',
    ),
    (
        "strings that JSON escapes, and non-ASCII",
        9,
        "000100077122756f5c7465000ac3bc6ec3af20f09f988000000000",
        "0003000000000000002a000000030010746162096e6c0a63746c011f2fe280a80000018bcfe56800",
        '{"type":"1","data":{"group":"q\\"uo\\\\te","topic":"ünï 😀","partition":0}}',
        '{"version":"3","data":{"offset":42,"leaderEpoch":3,"metadata":"tab\\tnl\\nctl\\u0001\\u001F/\u2028","commitTimestamp":1700000000000}}',
    ),
    (
        "malformed UTF-8, a surrogate included",
        10,
        "000100016700017400000000",
        "00030000000000000001ffffffff000861eda08062c328ff0000000000000005",
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"3","data":{"offset":1,"leaderEpoch":-1,"metadata":"a�b�(�","commitTimestamp":5}}',
    ),
    (
        "group metadata v0",
        11,
        "0002000167",
        "00000008636f6e73756d657200000007000572616e676500026d310000000100026d3100016300092f31302e302e302e31000027100000000d000000000001000174ffffffff00000019000000000001000174000000020000000000000001ffffffff",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"0","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1","members":[{"memberId":"m1","clientId":"c","clientHost":"/10.0.0.1","sessionTimeout":10000,"subscription":{"topics":["t"],"userData":null},"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0,1]}],"userData":null}}]}}',
    ),
    (
        "group metadata v4 (flexible), static member",
        12,
        "0002000167",
        "000409636f6e73756d6572000000070672616e6765036d310000018bcfe5680002036d31097374617469632d3102630a2f31302e302e302e310000ea6000002710220001000000020001610001620000000200010000000100016100000001000000002800010000000200016100000001000000000001620000000200000002000000030000000378797a0000",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"4","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m1","groupInstanceId":"static-1","clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":60000,"sessionTimeout":10000,"subscription":{"topics":["a","b"],"userData":"AAE=","ownedPartitions":[{"topic":"a","partitions":[0]}]},"assignment":{"assignedPartitions":[{"topic":"a","partitions":[0]},{"topic":"b","partitions":[2,3]}],"userData":"eHl6"}}]}}',
    ),
    (
        "group metadata of another protocol type: bytes stay base64",
        13,
        "0002000167",
        "00030007636f6e6e65637400000007000572616e676500026d310000018bcfe568000000000100026d31ffff00016300092f31302e302e302e310000ea60000027100000000d000000000001000174ffffffff000000150000000000010001740000000100000000ffffffff",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"3","data":{"protocolType":"connect","generation":7,"protocol":"range","leader":"m1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":60000,"sessionTimeout":10000,"subscription":"AAAAAAABAAF0/////w==","assignment":"AAAAAAABAAF0AAAAAQAAAAD/////"}]}}',
    ),
    (
        "consumer group with unreadable subscription and assignment bytes",
        14,
        "0002000167",
        "00030008636f6e73756d657200000007000572616e676500026d310000018bcfe568000000000100026d31ffff00016300092f31302e302e302e310000ea60000027100000000100000000080000000000096162",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":60000,"sessionTimeout":10000,"subscription":"AA==","assignment":"AAAAAAAJYWI="}]}}',
    ),
    (
        "subscription of a newer version: read as the newest it knows",
        15,
        "0002000167",
        "00030008636f6e73756d657200000007000572616e676500026d310000018bcfe568000000000100026d31ffff00016300092f31302e302e302e310000ea600000271000000019000500000001000174ffffffff00000000ffffffff000272310000000a000500000000ffffffff",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":60000,"sessionTimeout":10000,"subscription":{"topics":["t"],"userData":null,"ownedPartitions":[],"generationId":-1,"rackId":"r1"},"assignment":{"assignedPartitions":[],"userData":null}}]}}',
    ),
    (
        "subscription v4 with owned partitions cannot be read",
        16,
        "0002000167",
        "00030008636f6e73756d657200000007000572616e676500026d310000018bcfe568000000000100026d31ffff00016300092f31302e302e302e310000ea600000271000000022000400000001000174ffffffff000000010001740000000100000001ffffffffffff000000150003000000010001740000000100000001ffffffff",
        '{"type":"2","data":{"group":"g"}}',
        '{"version":"3","data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1","currentStateTimestamp":1700000000000,"members":[{"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.1","rebalanceTimeout":60000,"sessionTimeout":10000,"subscription":"AAQAAAABAAF0/////wAAAAEAAXQAAAABAAAAAf///////w==","assignment":{"assignedPartitions":[{"topic":"t","partitions":[1]}],"userData":null}}]}}',
    ),
    (
        "consumer group metadata (type 3)",
        17,
        "000300026367",
        "00000000000500",
        '{"type":"3","data":{"groupId":"cg"}}',
        '{"version":"0","data":{"epoch":5}}',
    ),
    (
        "consumer group partition metadata (type 4)",
        18,
        "000400026367",
        "000002000102030405060708090a0b0c0d0e0f027400000002020000000003037231037232000000",
        '{"type":"4","data":{"groupId":"cg"}}',
        '{"version":"0","data":{"topics":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","topicName":"t","numPartitions":2,"partitionMetadata":[{"partition":0,"racks":["r1","r2"]}]}]}}',
    ),
    (
        "consumer group member metadata (type 5)",
        19,
        "00050002636700016d",
        "00000002720263032f6802027400000493e008756e69666f726d00",
        '{"type":"5","data":{"groupId":"cg","memberId":"m"}}',
        '{"version":"0","data":{"instanceId":null,"rackId":"r","clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,"serverAssignor":"uniform"}}',
    ),
    (
        "member metadata of a classic member (tagged field)",
        20,
        "00050002636700016d",
        "00000269000263032f680104742e2affffffff00010011010000afc8020672616e67650300030000",
        '{"type":"5","data":{"groupId":"cg","memberId":"m"}}',
        '{"version":"0","data":{"instanceId":"i","rackId":null,"clientId":"c","clientHost":"/h","subscribedTopicNames":[],"subscribedTopicRegex":"t.*","rebalanceTimeoutMs":-1,"serverAssignor":null,"classicMemberMetadata":{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"AAM="}]}}}',
    ),
    (
        "target assignment metadata (type 6)",
        21,
        "000600026367",
        "00000000000900",
        '{"type":"6","data":{"groupId":"cg"}}',
        '{"version":"0","data":{"assignmentEpoch":9}}',
    ),
    (
        "target assignment member (type 7)",
        22,
        "00070002636700016d",
        "000002f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff0300000000000000020000",
        '{"type":"7","data":{"groupId":"cg","memberId":"m"}}',
        '{"version":"0","data":{"topicPartitions":[{"topicId":"8PHy8_T19vf4-fr7_P3-_w","partitions":[0,2]}]}}',
    ),
    (
        "current member assignment (type 8)",
        23,
        "00080002636700016d",
        "000000000003000000020002000102030405060708090a0b0c0d0e0f0200000001000100",
        '{"type":"8","data":{"groupId":"cg","memberId":"m"}}',
        '{"version":"0","data":{"memberEpoch":3,"previousMemberEpoch":2,"state":0,"assignedPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[1]}],"partitionsPendingRevocation":[]}}',
    ),
    (
        "type 4 value of version 1: its inline structs refuse it",
        24,
        "000400026367",
        "000102000102030405060708090a0b0c0d0e0f02740000000101000000",
        (
            "Error at offset 24, skipping. Could not read record with version 1 from value's buffer due to: Can't r"
            "ead version 1 of TopicMetadata."
        ),
        None,
    ),
    (
        "unknown record type 9",
        25,
        "0009000167",
        "0000",
        "Unknown record type 9 at offset 25, skipping.",
        None,
    ),
    (
        "unknown record type -1",
        26,
        "ffff",
        None,
        "Unknown record type -1 at offset 26, skipping.",
        None,
    ),
    (
        "empty key",
        27,
        "",
        "0003",
        "Error at offset 27, skipping. Could not read version from key's buffer.",
        None,
    ),
    (
        "empty value",
        28,
        "000100016700017400000000",
        "",
        "Error at offset 28, skipping. Could not read version from value's buffer.",
        None,
    ),
    (
        "one-byte value",
        29,
        "000100016700017400000000",
        "00",
        "Error at offset 29, skipping. Could not read version from value's buffer.",
        None,
    ),
    (
        "key string cut short",
        30,
        "000100056772",
        "0003",
        (
            "Error at offset 30, skipping. Could not read record with version 1 from key's buffer due to: Error rea"
            "ding byte array of 5 byte(s): only 2 byte(s) available."
        ),
        None,
    ),
    (
        "value cut short",
        31,
        "000100016700017400000000",
        "0003000000000000002a0000",
        "Error at offset 31, skipping. Could not read record with version 3 from value's buffer due to: null.",
        None,
    ),
    (
        "non-nullable string written as null",
        32,
        "000100016700017400000000",
        "00030000000000000001ffffffffffff0000000000000005",
        (
            "Error at offset 32, skipping. Could not read record with version 3 from value's buffer due to: non-nul"
            "lable field metadata was serialized as null."
        ),
        None,
    ),
    (
        "array longer than the bytes left",
        33,
        "0002000167",
        "00030008636f6e73756d657200000001ffffffff000000000000000000000100",
        (
            "Error at offset 33, skipping. Could not read record with version 3 from value's buffer due to: Tried t"
            "o allocate a collection of size 256, but there are only 0 bytes remaining.."
        ),
        None,
    ),
    (
        "varint longer than five bytes",
        34,
        "000100016700017400000000",
        "00040000000000000001ffffffff808080808001",
        (
            "Error at offset 34, skipping. Could not read record with version 4 from value's buffer due to: Varint "
            "is too long, the most significant bit in the 5th byte is set, converted value: 0."
        ),
        None,
    ),
    (
        "garbage bytes",
        35,
        "00014f2a9bff00",
        "deadbeef",
        (
            "Error at offset 35, skipping. Could not read record with version 1 from key's buffer due to: Error rea"
            "ding byte array of 20266 byte(s): only 3 byte(s) available."
        ),
        None,
    ),
]


TRANSACTIONS = [
    (
        "Empty (from a cluster)",
        0,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea6000ffffffff000001a20bffc59effffffffffffffff",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=1795497641374,txnTimeoutMs=60000",
    ),
    (
        "Ongoing (from a cluster)",
        1,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea60010000000100037478310000000100000000000001a20bffc88b000001a20bffc88b",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=Ongoing,partitions=[tx1-0],txnLastUpdateTimestamp=1795497642123,txnTimeoutMs=60000",
    ),
    (
        "PrepareCommit (from a cluster)",
        2,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea60020000000100037478310000000100000000000001a20bffc8e4000001a20bffc88b",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=PrepareCommit,partitions=[tx1-0],txnLastUpdateTimestamp=1795497642212,txnTimeoutMs=60000",
    ),
    (
        "CompleteCommit (from a cluster)",
        3,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea600400000000000001a20bffc8ef000001a20bffc88b",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=CompleteCommit,partitions=[],txnLastUpdateTimestamp=1795497642223,txnTimeoutMs=60000",
    ),
    (
        "PrepareAbort (from a cluster)",
        4,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea60030000000100037478310000000100000000000001a20bffc9e6000001a20bffc9c7",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=PrepareAbort,partitions=[tx1-0],txnLastUpdateTimestamp=1795497642470,txnTimeoutMs=60000",
    ),
    (
        "CompleteAbort (from a cluster)",
        5,
        "00000007742d70726f746f",
        "0000000000000000000000000000ea600500000000000001a20bffc9f0000001a20bffc9c7",
        "transaction_metadata::transactionalId=t-proto",
        "producerId:0,producerEpoch:0,state=CompleteAbort,partitions=[],txnLastUpdateTimestamp=1795497642480,txnTimeoutMs=60000",
    ),
    (
        "Dead",
        6,
        "000000027478",
        "00000000000000000fa100020000ea6006000000000000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx",
        "producerId:4001,producerEpoch:2,state=Dead,partitions=[],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "PrepareEpochFence",
        7,
        "000000027478",
        "00000000000000000fa100020000ea60070000000100066f726465727300000001000000000000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx",
        "producerId:4001,producerEpoch:2,state=PrepareEpochFence,partitions=[orders-0],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "Empty with null partitions (v0)",
        8,
        "000000027478",
        "00000000000000000fa100020000ea6000ffffffff0000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx",
        "producerId:4001,producerEpoch:2,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "flexible value (v1) with a tagged field",
        9,
        "0000000774782d666c6578",
        "00010000000000000fa100020000ea600102076f72646572730200000003000000018bcfe5687b0000018bcfe568000104027a7a",
        "transaction_metadata::transactionalId=tx-flex",
        "producerId:4001,producerEpoch:2,state=Ongoing,partitions=[orders-3],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "partitions of several topics, in the broker's hash-set order",
        10,
        "0000000774782d6d616e79",
        "00000000000000000fa100020000ea60020000000300066f72646572730000000300000000000000010000000200087061796d656e74730000000100000005000961756469742d6c6f6700000002000000000000000b0000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx-many",
        "producerId:4001,producerEpoch:2,state=PrepareCommit,partitions=[payments-5,audit-log-11,orders-0,orders-1,orders-2,audit-log-0],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "more than four partitions of a topic",
        11,
        "0000000774782d77696465",
        "00000000000000000fa100020000ea60040000000100066576656e74730000000c000000000000000100000002000000030000000400000005000000060000000700000008000000090000000a0000000b0000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx-wide",
        "producerId:4001,producerEpoch:2,state=CompleteCommit,partitions=[events-11,events-3,events-4,events-5,events-6,events-7,events-8,events-9,events-10,events-0,events-1,events-2],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "many small groups that grow the hash table",
        12,
        "0000000774782d67726f77",
        "00000000000000000fa100020000ea60030000000a0002743000000002000000000000000100027431000000020000000100000002000274320000000200000002000000030002743300000002000000030000000400027434000000020000000400000005000274350000000200000005000000060002743600000002000000060000000700027437000000020000000700000008000274380000000200000008000000090002743900000002000000090000000a0000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx-grow",
        "producerId:4001,producerEpoch:2,state=PrepareAbort,partitions=[t0-1,t1-2,t2-3,t3-4,t4-5,t5-6,t6-7,t7-8,t8-9,t9-10,t0-0,t1-1,t2-2,t3-3,t4-4,t5-5,t6-6,t7-7,t8-8,t9-9],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "the same partition twice",
        13,
        "0000000674782d647570",
        "00000000000000000fa100020000ea60010000000200016100000002000000010000000100016100000001000000010000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx-dup",
        "producerId:4001,producerEpoch:2,state=Ongoing,partitions=[a-1],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "non-ASCII transactional id",
        14,
        "0000000874782dc3bc6ec3af",
        "00000000000000000fa100020000ea6000000000000000018bcfe5687b0000018bcfe56800",
        "transaction_metadata::transactionalId=tx-ünï",
        "producerId:4001,producerEpoch:2,state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    ),
    (
        "transaction tombstone",
        15,
        "00000004676f6e65",
        None,
        "transaction_metadata::transactionalId=gone",
        "<DELETE>",
    ),
    (
        "key of an unknown version",
        16,
        "000100027478",
        "0000",
        "unknown::version=1",
        None,
    ),
]


Record = tuple[bytes, bytes | None]


def _bytes(hex_text: str | None) -> bytes | None:
    return None if hex_text is None else bytes.fromhex(hex_text)


@pytest.mark.parametrize(
    ("name", "offset", "key", "value", "shown_key", "shown_payload"), OFFSETS, ids=[r[0] for r in OFFSETS]
)
def test_it_prints_what_the_offsets_decoder_prints(name, offset, key, value, shown_key, shown_payload):
    assert offsets_key_payload(_bytes(key), _bytes(value), offset) == (shown_key, shown_payload)


@pytest.mark.parametrize(
    ("name", "offset", "key", "value", "shown_key", "shown_payload"), TRANSACTIONS, ids=[r[0] for r in TRANSACTIONS]
)
def test_it_prints_what_the_transaction_log_decoder_prints(name, offset, key, value, shown_key, shown_payload):
    assert transaction_key_payload(_bytes(key), _bytes(value), offset) == (shown_key, shown_payload)


def test_a_record_without_a_key_gets_the_sentence_the_tool_dies_with():
    message = "Failed to decode message at offset 12 using offset topic decoder (message had a missing key)"
    assert offsets_key_payload(None, b"\x00\x03", 12) == (f"Error at offset 12, skipping. {message}", None)
    key, payload = transaction_key_payload(None, b"\x00\x00", 12)
    assert (
        key == 'Error at offset 12, skipping. Cannot invoke "java.nio.ByteBuffer.getShort()" because "buffer" is null'
    )
    assert payload is None


TXN_KEY = "000000027478"  # version 0, transactional id "tx"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("", None, "java.nio.BufferUnderflowException"),
        ("00000005ab", None, "Error reading byte array of 5 byte(s): only 1 byte(s) available"),
        ("0000ffff", None, "non-nullable field transactionalId was serialized as null"),
        (TXN_KEY, "", "java.nio.BufferUnderflowException"),
        (TXN_KEY, "0002", "Unknown version 2 from the transaction log message value"),
        (
            TXN_KEY,
            "0000" + "0000000000000006" + "0000" + "0000ea60" + "09" + "00000000" + "00" * 16,
            "Unknown transaction state id 9 from the transaction status message",
        ),
        (
            TXN_KEY,
            "0000" + "0000000000000006" + "0000" + "0000ea60" + "01" + "ffffffff" + "00" * 16,
            'Cannot invoke "java.util.List.forEach(java.util.function.Consumer)" because the return value of '
            '"org.apache.kafka.coordinator.transaction.generated.TransactionLogValue.transactionPartitions()" is null',
        ),
    ],
)
def test_a_transaction_record_the_tool_dies_on_gets_the_exceptions_message(key, value, message):
    assert transaction_key_payload(bytes.fromhex(key), _bytes(value), 7) == (
        f"Error at offset 7, skipping. {message}",
        None,
    )


def _cut_and_flipped(rows: list[tuple[str, int, str, str | None, str | None, str | None]]) -> Iterator[Record]:
    """Every record of ``rows`` cut at every length and with each byte changed, key and value in turn."""
    rng = random.Random(20240915)
    for _, _, key, value, _, _ in rows:
        raw_key, raw_value = bytes.fromhex(key), _bytes(value)
        for n in range(len(raw_key)):
            yield raw_key[:n], raw_value
        if raw_value is not None:
            for n in range(len(raw_value)):
                yield raw_key, raw_value[:n]
                changed = bytearray(raw_value)
                changed[n] = rng.randrange(256)
                yield raw_key, bytes(changed)


def test_damaged_records_never_raise():
    for decoder, rows in ((offsets_key_payload, OFFSETS), (transaction_key_payload, TRANSACTIONS)):
        for key, value in _cut_and_flipped(rows):
            shown_key, shown_payload = decoder(key, value, 3)
            assert isinstance(shown_key, str)
            assert shown_payload is None or isinstance(shown_payload, str)


def test_random_bytes_never_raise():
    rng = random.Random(7)
    for _ in range(3000):
        key = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
        value = None if rng.random() < 0.1 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
        for record_type in (key, b"\x00\x01" + key, b"\x00\x02" + key, b"\x00\x00" + key):
            offsets_key_payload(record_type, value, 0)
            transaction_key_payload(record_type, value, 0)


def test_an_undecodable_offsets_record_has_the_error_as_key_and_no_payload():
    key, payload = offsets_key_payload(b"\x00\x01\x00", b"\x00\x03", 5)
    assert key == ("Error at offset 5, skipping. Could not read record with version 1 from key's buffer due to: null.")
    assert payload is None


def test_it_decodes_utf8_as_java_does():
    # A UTF-16 surrogate encoded in UTF-8 is one malformed sequence to Java, three bytes to Python.
    assert java_utf8(b"a\xed\xa0\x80b") == "a\ufffdb"
    assert java_utf8(b"a\xed\xa0") == "a\ufffd"
    assert java_utf8(b"\xed\xa0A") == "\ufffdA"
    assert java_utf8(b"\xed\x9f\xbf") == "\ud7ff"
    assert java_utf8(b"\xe2\x82A\xc3") == "\ufffdA\ufffd"
    assert java_utf8("ünï 😀".encode()) == "ünï 😀"


def test_partitions_come_in_the_order_of_the_brokers_hash_set():
    # TopicPartition("a", p).hashCode() is 31 * (31 + p) + 97: a-0 falls in bucket 2 of 16, a-1 in bucket 1.
    assert scala_hash_set_order([[("a", 0), ("a", 1)]]) == [("a", 1), ("a", 0)]
    # a partition added twice is held once, where it was first put
    assert scala_hash_set_order([[("a", 0)], [("a", 0), ("a", 1)]]) == [("a", 1), ("a", 0)]
