"""What the console is pointed at: typed environment readers, the Kafka clusters, their Connect clusters, masking
rules."""
