"""Every change the console makes, as the page and the API both make it: checked, run and audited through
console.access.perform, with what the audit log keeps of its parameters and result. One module per area:

- ``topics``: create a topic, add partitions, change configs, delete records, delete a topic;
- ``messages``: produce a message, save a topic's Avro schema;
- ``groups``: reset a consumer group's offsets, delete a group or its offsets of a topic;
- ``replication``: reassign partitions (execute, verify, cancel), elect leaders;
- ``cluster``: dynamic broker configs, stopping and starting the embedded cluster's brokers (the mechanism
  of which is ``embedded``);
- ``transactions``: abort a hanging transaction;
- ``quotas``: client quotas;
- ``acls``: ACLs and SCRAM users;
- ``zookeeper``: create, set and delete znodes;
- ``connect``: Kafka Connect connectors, their tasks and offsets;
- ``saved_queries``: save and delete a saved SQL query (its owner only).

Views import the area's module (``from console.changes import topics as topic_changes``); this package
itself holds nothing else."""
