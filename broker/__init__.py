"""Everything that talks to Kafka and ZooKeeper. Knows nothing of Django."""
