"""Schema registries: records in the Confluent wire format (magic byte 0, a 4-byte schema id, then Avro,
Protobuf after its message indexes, or JSON Schema-checked JSON), the schemas they name, and the registry's
subjects, versions and compatibility rules (any Confluent-compatible registry: Confluent's, Karapace,
Redpanda's, Apicurio's ccompat API).

``model`` holds what the reading side and the registry client share: a registered schema and the source it is
looked up from.
"""
