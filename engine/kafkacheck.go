package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
)

// KafkaService names what the service with this id uses on Kafka (its
// prefix, command topic, command log's transactional ids and processing
// log) for the permission checks: the start-up check, CREATE's and
// sqlstreams check-kafka's. plog is the server's processing log setting.
func KafkaService(serviceID string, plog ProcessingLogConfig) kafka.Service {
	topic := plog.Topic
	if topic == "" {
		topic = ProcessingLogTopic(serviceID)
	}
	return kafka.Service{
		ID:                      serviceID,
		CommandTopic:            catalog.CommandTopic(serviceID),
		CommandTransactionalIDs: catalog.CommandTransactionalID(serviceID, ""),
		ProcessingLog:           topic,
		ProcessingLogCreate:     !plog.NoTopicCreate,
	}
}

// connectTimeout bounds the first contact with Kafka at Open: a refused
// login or an untrusted certificate fails the start within it.
const connectTimeout = 15 * time.Second

// connect is Open's first contact with Kafka: it fails (explained) when
// the brokers refuse the login or the certificate or cannot be reached,
// and when they are too old for exactly-once and the server's default
// guarantee is exactly-once (under at-least-once it warns, and queries
// that ask for exactly-once are refused at CREATE). With CheckKafka it
// logs every permission the service lacks, at once.
func (e *Engine) connect(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	brokers, err := e.cfg.Kafka.Ping(cctx)
	if err != nil {
		return fmt.Errorf("connecting to Kafka: %w", err)
	}
	if err := kafka.ExactlyOnce(brokers); err != nil {
		if !e.cfg.AtLeastOnce {
			return err
		}
		e.noExactlyOnce = err
		e.log.Warn("exactly-once is not available; queries run at-least-once", "err", err)
	}
	if !e.cfg.CheckKafka {
		return nil
	}
	missing, err := e.cfg.Kafka.Check(cctx, KafkaService(e.cfg.ServiceID, e.cfg.ProcessingLog).Permissions())
	if err != nil {
		return fmt.Errorf("checking permissions on Kafka: %w", err)
	}
	e.logMissing(missing, "the service")
	return nil
}

// logMissing logs each missing permission with the command granting it.
func (e *Engine) logMissing(missing []kafka.Missing, of string) {
	principal := e.cfg.Kafka.Principal
	if principal == "" {
		principal = "User:ANONYMOUS"
	}
	for _, m := range missing {
		level, what := "missing", "Kafka permission missing"
		if m.Optional {
			what = "Kafka permission missing (needed only by some statements)"
		}
		if m.Unchecked != "" {
			level, what = "unchecked", "Kafka permission not checked"
		}
		e.log.Warn(what, "permission", m.String(), "principal", principal, "for", m.Why, "status", level,
			"unchecked", m.Unchecked, "grant", m.Grant(principal, e.cfg.Kafka.Brokers))
	}
	if len(missing) > 0 {
		e.log.Warn("Kafka permissions missing for "+of+" (listed above); sqlstreams check-kafka lists them too", "count", len(missing))
	}
}

// checkQuery asks the cluster whether it grants a new query (topo, run
// at-least-once or not) what it needs: READ on its inputs, WRITE on its
// output (CREATE when it is missing), its internal topics, group and
// transactional ids. A refusal fails the statement, naming every missing
// permission.
func (e *Engine) checkQuery(ctx context.Context, topo *physical.Topology, alos bool) error {
	if !alos && e.noExactlyOnce != nil {
		return sql.Errorf(sql.CodeFeatureNotSupport, "%v", e.noExactlyOnce)
	}
	if !e.cfg.CheckKafka {
		return nil
	}
	svc := kafka.Service{ID: e.cfg.ServiceID}
	seen := map[string]bool{}
	for _, t := range topo.SourceTopics() {
		if !seen[t] {
			seen[t] = true
			svc.Read = append(svc.Read, t)
		}
	}
	for _, n := range topo.Nodes {
		if s, ok := n.Op.(*physical.Sink); ok {
			svc.Write = append(svc.Write, s.Topic)
		}
	}
	var need []kafka.Permission
	for _, p := range svc.Permissions() {
		if p.Optional || (alos && p.Type == kafka.TransactionalID) {
			continue
		}
		need = append(need, p)
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	missing, err := e.cfg.Kafka.Check(cctx, need)
	if err != nil {
		return fmt.Errorf("checking permissions on Kafka: %w", err)
	}
	principal := e.cfg.Kafka.Principal
	if principal == "" {
		principal = "User:ANONYMOUS"
	}
	var lines []string
	for _, m := range missing {
		if m.Unchecked != "" {
			e.log.Warn("Kafka permission not checked", "permission", m.String(), "why", m.Unchecked)
			continue
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s", m, m.Why, m.Grant(principal, e.cfg.Kafka.Brokers)))
	}
	if len(lines) == 0 {
		return nil
	}
	return sql.Errorf(sql.CodeInsufficientPrivilege, "Kafka does not grant %s what the query needs:\n  %s", principal, strings.Join(lines, "\n  "))
}
