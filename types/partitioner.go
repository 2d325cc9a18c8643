package types

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Partitioner is the function that put a topic's keyed records in their
// partitions: what a source declares in WITH (PARTITIONER='…'), and what
// the engine must use wherever it has to agree with the topic (a
// repartition toward it, a foreign-key subscription, pull-query routing,
// INSERT VALUES). The zero value is Murmur2, Kafka's Java client's and
// franz-go's default.
type Partitioner uint8

// Partitioners.
const (
	// Murmur2 is murmur2(key) & 0x7fffffff % partitions: the Java
	// client's, franz-go's, Kafka Streams' and librdkafka's
	// murmur2_random.
	Murmur2 Partitioner = iota
	// CRC32 is crc32(key) % partitions (IEEE): librdkafka's default,
	// consistent_random (kcat, confluent-kafka for Python, Go, .NET,
	// node-rdkafka).
	CRC32
	// UnknownPartitioner says nothing is known of how the topic's
	// producers chose partitions: the engine repartitions the source
	// by murmur2 before anything that needs co-partitioned input.
	UnknownPartitioner
)

// ParsePartitioner reads a PARTITIONER value, in any case: murmur2
// (also murmur2_random, the librdkafka name, and default), crc32 (also
// consistent_random and consistent, librdkafka's names) or unknown.
func ParsePartitioner(s string) (Partitioner, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "murmur2", "murmur2_random", "default":
		return Murmur2, nil
	case "crc32", "consistent_random", "consistent":
		return CRC32, nil
	case "unknown":
		return UnknownPartitioner, nil
	}
	return Murmur2, fmt.Errorf("unknown PARTITIONER '%s': expected 'murmur2' (the Java client's and franz-go's default), 'crc32' (librdkafka's default, consistent_random: kcat, confluent-kafka) or 'unknown'", s)
}

func (p Partitioner) String() string {
	switch p {
	case CRC32:
		return "crc32"
	case UnknownPartitioner:
		return "unknown"
	}
	return "murmur2"
}

// Known reports whether the partitioner is a function of the key
// (murmur2 or crc32), so a key's partition can be computed.
func (p Partitioner) Known() bool { return p != UnknownPartitioner }

// Partition returns the partition of a record with key among n
// partitions (n > 0); for UnknownPartitioner, murmur2's (what a
// repartition of such a source writes).
func (p Partitioner) Partition(key []byte, n int32) int32 {
	if p == CRC32 {
		return CRC32Partition(key, n)
	}
	return Murmur2Partition(key, n)
}

// CRC32Partition is librdkafka's consistent partitioner: the IEEE CRC32
// of the key modulo n (rd_kafka_msg_partitioner_consistent). librdkafka
// sends a record with a null or empty key to a random partition under
// consistent_random; callers skip those keys.
func CRC32Partition(key []byte, n int32) int32 {
	return int32(crc32.ChecksumIEEE(key) % uint32(n))
}

// Murmur2Partition is the partition Kafka's default partitioner picks
// for a record with key among n partitions: murmur2 of the key, made
// positive, modulo n (Java's Utils.murmur2 and toPositive).
func Murmur2Partition(key []byte, n int32) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
	)
	length := len(key)
	h := seed ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := binary.LittleEndian.Uint32(key[i:])
		k *= m
		k ^= k >> 24
		k *= m
		h *= m
		h ^= k
	}
	tail := key[length&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h&0x7fffffff) % n
}
