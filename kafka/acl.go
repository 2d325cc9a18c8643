package kafka

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Operation is a Kafka ACL operation.
type Operation int8

// The operations sqlstreams needs or explains. Kafka implies DESCRIBE
// from READ, WRITE, DELETE and ALTER.
const (
	Read Operation = iota + 1
	Write
	Create
	Delete
	Alter
	Describe
	DescribeConfigs
	AlterConfigs
	IdempotentWrite
)

// String is the operation as Kafka's errors and kafka-acls --list print
// it: READ, WRITE, …
func (o Operation) String() string {
	switch o {
	case Read:
		return "READ"
	case Write:
		return "WRITE"
	case Create:
		return "CREATE"
	case Delete:
		return "DELETE"
	case Alter:
		return "ALTER"
	case Describe:
		return "DESCRIBE"
	case DescribeConfigs:
		return "DESCRIBE_CONFIGS"
	case AlterConfigs:
		return "ALTER_CONFIGS"
	case IdempotentWrite:
		return "IDEMPOTENT_WRITE"
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// flag is the operation as kafka-acls --operation takes it.
func (o Operation) flag() string {
	switch o {
	case DescribeConfigs:
		return "DescribeConfigs"
	case AlterConfigs:
		return "AlterConfigs"
	case IdempotentWrite:
		return "IdempotentWrite"
	}
	s := strings.ToLower(o.String())
	return strings.ToUpper(s[:1]) + s[1:]
}

// kmsg is the operation's wire value.
func (o Operation) kmsg() kmsg.ACLOperation {
	switch o {
	case Read:
		return kmsg.ACLOperationRead
	case Write:
		return kmsg.ACLOperationWrite
	case Create:
		return kmsg.ACLOperationCreate
	case Delete:
		return kmsg.ACLOperationDelete
	case Alter:
		return kmsg.ACLOperationAlter
	case Describe:
		return kmsg.ACLOperationDescribe
	case DescribeConfigs:
		return kmsg.ACLOperationDescribeConfigs
	case AlterConfigs:
		return kmsg.ACLOperationAlterConfigs
	case IdempotentWrite:
		return kmsg.ACLOperationIdempotentWrite
	}
	return kmsg.ACLOperationUnknown
}

// ResourceType is the kind of Kafka resource an ACL covers.
type ResourceType int8

// The resource types sqlstreams uses.
const (
	Topic ResourceType = iota + 1
	Group
	TransactionalID
	Cluster
)

// String is the resource type in words ("topic", "transactional id").
func (t ResourceType) String() string {
	switch t {
	case Topic:
		return "topic"
	case Group:
		return "group"
	case TransactionalID:
		return "transactional id"
	case Cluster:
		return "cluster"
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// Resource is a Kafka resource, or (Prefixed) every resource of its type
// whose name starts with Name: what an ACL's resource pattern names.
type Resource struct {
	Type ResourceType
	// Name is the topic, group or transactional id (unused for the
	// cluster).
	Name string
	// Prefixed makes Name a prefix (kafka-acls --resource-pattern-type
	// prefixed).
	Prefixed bool
}

// String describes the resource: topic "orders", topics prefixed
// "sqlstreams_", the cluster.
func (r Resource) String() string {
	switch {
	case r.Type == Cluster:
		return "the cluster"
	case r.Prefixed && r.Type == TransactionalID:
		return fmt.Sprintf("transactional ids prefixed %q", r.Name)
	case r.Prefixed:
		return fmt.Sprintf("%ss prefixed %q", r.Type, r.Name)
	}
	return fmt.Sprintf("%s %q", r.Type, r.Name)
}

// flags are the resource as kafka-acls names it.
func (r Resource) flags() string {
	var s string
	switch r.Type {
	case Topic:
		s = "--topic " + shellWord(r.Name)
	case Group:
		s = "--group " + shellWord(r.Name)
	case TransactionalID:
		s = "--transactional-id " + shellWord(r.Name)
	case Cluster:
		return "--cluster"
	}
	if r.Prefixed {
		s = "--resource-pattern-type prefixed " + s
	}
	return s
}

// shellWord quotes s for a shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:/,=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Permission is an operation on a resource that the service needs.
type Permission struct {
	Operation
	Resource
	// Why says what needs it, for the user deciding whether to grant it.
	Why string
	// Optional marks a permission only some statements need (RESET
	// QUERY, DROP … DELETE TOPIC): check-kafka reports it missing but
	// does not fail for it.
	Optional bool
	// WhenAbsent marks CREATE on a topic that is needed only while the
	// topic does not exist.
	WhenAbsent bool
}

// String is "READ on topic \"orders\"".
func (p Permission) String() string { return p.Operation.String() + " on " + p.Resource.String() }

// Grant is the kafka-acls command that grants principal the permission on
// the cluster at brokers (the first is enough for kafka-acls; an admin's
// --command-config is the user's to add).
func (p Permission) Grant(principal string, brokers []string) string {
	b := "<broker:port>"
	if len(brokers) > 0 {
		b = strings.Join(brokers, ",")
	}
	return fmt.Sprintf("kafka-acls --bootstrap-server %s --add --allow-principal %s --operation %s %s",
		b, shellWord(principal), p.Operation.flag(), p.Resource.flags())
}

// covers reports whether r (a literal resource or a prefix) includes
// name's resource of type t.
func (r Resource) covers(t ResourceType, name string) bool {
	if r.Type != t {
		return false
	}
	if r.Prefixed {
		return strings.HasPrefix(name, r.Name)
	}
	return r.Name == name
}

// Service names what a sqlstreams service creates and uses on a Kafka
// cluster; Permissions lists the ACLs its principal needs. The names come
// from the packages that make them (catalog.CommandTopic,
// engine.ProcessingLogTopic, …), so this list follows when they change.
type Service struct {
	// ID is the service id. Everything the service creates for itself
	// is named under Prefix(): queries' application ids, consumer
	// groups, internal topics and transactional ids.
	ID string
	// CommandTopic is the command topic; CommandTransactionalIDs the
	// prefix of its writers' transactional ids (an instance id is
	// appended). Each is listed on its own only when not under Prefix().
	CommandTopic, CommandTransactionalIDs string
	// ProcessingLog is the processing log's topic ("" when it is not
	// written); ProcessingLogCreate, whether the server creates it.
	ProcessingLog       string
	ProcessingLogCreate bool
	// Read are the topics the service's queries read; Write, the topics
	// they write (created when missing).
	Read, Write []string
}

// Prefix is what every name the service makes for itself starts with:
// the service id and an underscore.
func (s Service) Prefix() string { return s.ID + "_" }

// Permissions lists every permission the service needs, the prefixed
// ones first. It is the list check-kafka checks and docs/kafka-acls.md
// prints.
func (s Service) Permissions() []Permission {
	prefix := s.Prefix()
	topics := Resource{Type: Topic, Name: prefix, Prefixed: true}
	groups := Resource{Type: Group, Name: prefix, Prefixed: true}
	txns := Resource{Type: TransactionalID, Name: prefix, Prefixed: true}
	out := []Permission{
		{Operation: Create, Resource: topics, Why: "internal topics (changelogs, repartition topics) and the service's own topics"},
		{Operation: Read, Resource: topics, Why: "reading internal topics and restoring state"},
		{Operation: Write, Resource: topics, Why: "writing internal topics"},
		{Operation: Delete, Resource: topics, Why: "RESET QUERY deletes a query's internal topics", Optional: true},
		{Operation: AlterConfigs, Resource: topics, Why: "window changelogs of queries created before they were compact,delete get their retention at start", Optional: true},
		{Operation: Read, Resource: groups, Why: "queries' consumer groups (" + prefix + "query_<ID>)"},
		{Operation: Delete, Resource: groups, Why: "RESET QUERY deletes a query's consumer group", Optional: true},
		{Operation: Write, Resource: txns, Why: "exactly-once stream threads' transactional ids (" + prefix + "query_<ID>-<instance>-<thread>)"},
	}
	under := func(t ResourceType, name string) bool {
		return (Resource{Type: t, Name: prefix, Prefixed: true}).covers(t, name)
	}
	if c := s.CommandTopic; c != "" && !under(Topic, c) {
		r := Resource{Type: Topic, Name: c}
		out = append(out,
			Permission{Operation: Read, Resource: r, Why: "the command topic: the catalog"},
			Permission{Operation: Write, Resource: r, Why: "the command topic: the catalog"},
			Permission{Operation: Create, Resource: r, Why: "creating the command topic", WhenAbsent: true})
	}
	if c := s.CommandTransactionalIDs; c != "" && !under(TransactionalID, c) {
		out = append(out, Permission{Operation: Write, Resource: Resource{Type: TransactionalID, Name: c, Prefixed: true},
			Why: "writing the command topic (one transactional id per instance)"})
	}
	if l := s.ProcessingLog; l != "" && !under(Topic, l) {
		r := Resource{Type: Topic, Name: l}
		out = append(out, Permission{Operation: Write, Resource: r, Why: "the processing log"})
		if s.ProcessingLogCreate {
			out = append(out, Permission{Operation: Create, Resource: r, Why: "creating the processing log", WhenAbsent: true})
		}
		out = append(out, Permission{Operation: Read, Resource: r, Why: "SELECT … FROM PROCESSING_LOG", Optional: true})
	}
	seen := map[Permission]bool{}
	add := func(p Permission) {
		if under(p.Type, p.Name) {
			return // the prefix grants it
		}
		k := p
		k.Why = ""
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, t := range s.Read {
		add(Permission{Operation: Read, Resource: Resource{Type: Topic, Name: t}, Why: "a query's input"})
	}
	for _, t := range s.Write {
		add(Permission{Operation: Write, Resource: Resource{Type: Topic, Name: t}, Why: "a query's output"})
		add(Permission{Operation: Create, Resource: Resource{Type: Topic, Name: t}, Why: "creating a query's output topic", WhenAbsent: true})
	}
	return out
}
