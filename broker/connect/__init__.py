"""Kafka Connect through its workers' REST API."""
