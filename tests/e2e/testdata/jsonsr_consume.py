"""Confluent's Python JSON Schema deserializer (python3-confluent-kafka,
python3-jsonschema) reading what sqlstreams writes as JSON_SR.

  jsonsr_consume.py BOOTSTRAP REGISTRY TOPIC N > lines "key<TAB>value-json"

It takes the latest schema of TOPIC-value from the registry and validates
every record against it, as the deserializer does.
"""
import json
import sys

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    bootstrap, registry, topic, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sr = SchemaRegistryClient({"url": registry})
    schema = sr.get_latest_version(topic + "-value").schema.schema_str
    deser = JSONDeserializer(schema)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "jsonsr-" + topic,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, idle = 0, 0
    while got < want and idle < 60:
        m = c.poll(1.0)
        if m is None:
            idle += 1
            continue
        if m.error():
            sys.exit(str(m.error()))
        v = deser(m.value(), SerializationContext(topic, MessageField.VALUE))
        print("%s\t%s" % (m.key().decode() if m.key() else "", json.dumps(v, sort_keys=True)), flush=True)
        got += 1
    c.close()
    if got < want:
        sys.exit("got %d records of %d" % (got, want))


main()
