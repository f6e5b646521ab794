"""Replication: who leads and follows what, what changed, and moving partitions between brokers."""
