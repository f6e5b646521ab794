"""ZooKeeper as a ZooKeeper-mode Kafka cluster uses it.

``paths`` checks znode paths and splits connect strings, ``client`` reads znodes through one kazoo
session per cluster, ``registry`` says what Kafka keeps in a znode, ``fourletter`` asks each server
how it is (``srvr``, ``mntr``). Only ``writes`` changes znodes, and only on a cluster whose
``zookeeper_writes`` setting allows it.
"""
