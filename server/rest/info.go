package rest

// This file serves the introspection endpoints: GET /info, /healthcheck
// and /status[/<commandId>].

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
)

// handleInfo answers GET /info with ksqlDB's ServerInfo.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	type serverInfo struct {
		Version        string `json:"version"`
		KafkaClusterID string `json:"kafkaClusterId"`
		KsqlServiceID  string `json:"ksqlServiceId"`
		ServerStatus   string `json:"serverStatus"`
	}
	i := s.cfg.info
	writeJSON(w, r, http.StatusOK, map[string]serverInfo{"KsqlServerInfo": {
		Version: i.Version, KafkaClusterID: i.KafkaClusterID, KsqlServiceID: i.ServiceID, ServerStatus: "RUNNING",
	}})
}

// healthCache keeps the last health check for healthCacheTTL, so that a
// load balancer polling often does not list Kafka topics each time.
type healthCache struct {
	mu     sync.Mutex
	at     time.Time
	result healthCheck
}

type healthDetail struct {
	IsHealthy bool `json:"isHealthy"`
}

// healthCheck is ksqlDB's HealthCheckResponse.
type healthCheck struct {
	IsHealthy bool                    `json:"isHealthy"`
	Details   map[string]healthDetail `json:"details"`
}

// handleHealthcheck answers GET /healthcheck: the catalog answers
// (metastore), Kafka answers a topic listing within 5 s (kafka); 200 when
// both do, 503 otherwise. It needs no credentials.
func (s *Server) handleHealthcheck(w http.ResponseWriter, r *http.Request) {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at.IsZero() || time.Since(h.at) > healthCacheTTL {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		check := func(stmt string) healthDetail {
			_, err := s.eng.Execute(ctx, engine.NewSession(), stmt, &table{})
			return healthDetail{IsHealthy: err == nil}
		}
		meta, kafka := check("SHOW STREAMS"), check("SHOW TOPICS")
		cancel()
		h.result = healthCheck{
			IsHealthy: meta.IsHealthy && kafka.IsHealthy,
			Details: map[string]healthDetail{
				"metastore":     meta,
				"kafka":         kafka,
				"commandRunner": {IsHealthy: true},
			},
		}
		h.at = time.Now()
	}
	status := http.StatusOK
	if !h.result.IsHealthy {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, r, status, h.result)
}

// commandStatus is ksqlDB's CommandStatus.
type commandStatus struct {
	Status  string  `json:"status"`
	Message string  `json:"message"`
	QueryID *string `json:"queryId"`
}

// maxCommands bounds the command outcomes /status remembers.
const maxCommands = 10000

// recordCommand remembers a command's outcome for /status.
func (s *Server) recordCommand(id string, st commandStatus) {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if _, ok := s.cmds[id]; !ok {
		s.order = append(s.order, id)
		if len(s.order) > maxCommands {
			delete(s.cmds, s.order[0])
			s.order = s.order[1:]
		}
	}
	s.cmds[id] = st
}

// handleStatus answers GET /status/<type>/<entity>/<action> with the
// command's status, and GET /status with every remembered command's
// status. Statements run synchronously here, so a command this server ran
// is SUCCESS; one it did not run (another instance's, or one from before
// a restart) is 404.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	id := strings.Trim(strings.TrimPrefix(r.URL.Path, "/status"), "/")
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if id == "" {
		all := make(map[string]string, len(s.cmds))
		for k, v := range s.cmds {
			all[k] = v.Status
		}
		writeJSON(w, r, http.StatusOK, map[string]any{"commandStatuses": all})
		return
	}
	st, ok := s.cmds[id]
	if !ok {
		writeJSON(w, r, http.StatusNotFound, genericError(codeNotFound, "command not found: "+id))
		return
	}
	writeJSON(w, r, http.StatusOK, st)
}
