"""Confluent's Python Avro serializer and deserializer (python3-confluent-kafka,
python3-avro) against sqlstreams' embedded broker and schema registry.

  avro_client.py produce BOOTSTRAP REGISTRY TOPIC   < lines "key<TAB>schema<TAB>value-json"
  avro_client.py consume BOOTSTRAP REGISTRY TOPIC N  > lines "key<TAB>schema-id<TAB>value-json"

produce registers each schema under TOPIC-value (Confluent's serializer does)
and writes the value in the Confluent wire format, the key as UTF-8 bytes.
consume reads N records read_committed from the start and decodes them with
the schemas the registry holds for their IDs.
"""
import json
import struct
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.avro import CachedSchemaRegistryClient, loads
from confluent_kafka.avro.serializer.message_serializer import MessageSerializer


def main():
    mode, bootstrap, registry, topic = sys.argv[1:5]
    ser = MessageSerializer(CachedSchemaRegistryClient({"url": registry}))
    if mode == "produce":
        p = Producer({"bootstrap.servers": bootstrap})
        for line in sys.stdin:
            line = line.rstrip("\n")
            if not line:
                continue
            key, schema, value = line.split("\t")
            data = ser.encode_record_with_schema(topic, loads(schema), json.loads(value))
            p.produce(topic, key=key.encode(), value=data)
        if p.flush(30) != 0:
            sys.exit("records left unsent")
        return
    want = int(sys.argv[5])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-client-" + topic,
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
        schema_id = struct.unpack(">I", m.value()[1:5])[0]
        value = ser.decode_message(m.value())
        print("%s\t%d\t%s" % (m.key().decode(), schema_id, json.dumps(value, sort_keys=True)), flush=True)
        got += 1
    c.close()
    if got < want:
        sys.exit("got %d records of %d" % (got, want))


main()
