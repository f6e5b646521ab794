"""The embedded cluster: ZooKeeper and Apache Kafka brokers run from Maven Central's jars.

Run ``python -m broker.local --help``.
"""
