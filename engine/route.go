package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Pull queries from any instance. A table's state is spread over the
// instances running its materializing query: partition p of the store is
// kept by the member that owns task p. A pull query asked of one instance
// reads the partitions it owns and forwards the query, with the
// partitions wanted, to the owners of the others over the internal REST
// endpoint (InternalPullPath); their rows are merged. A key lookup goes
// only to the owner of the key's partition (the partitioner the sink
// uses). Owners and their endpoints come from the query's group (its
// members' assignments and metadata, see exec.MemberInfo). A partition no
// live member owns, or whose owner does not answer, fails the query with
// an error that says so: never a partial answer.

// InternalPullPath is the REST path of the internal pull endpoint.
const InternalPullPath = "/internal/pull"

// codeUnavailable is the SQLSTATE of a pull query some of whose
// partitions have no owner that can answer now (cannot_connect_now).
const codeUnavailable = "57P03"

// ownersTTL is how long a group's owners are reused.
const ownersTTL = time.Second

// forwardTimeout bounds one forwarded pull query.
const forwardTimeout = 10 * time.Second

// router keeps what routing needs between pull queries.
type router struct {
	mu     sync.Mutex
	parts  map[string]int32       // topic → partitions
	owners map[string]ownersEntry // app ID → owners
	stores map[storeKey]pullStore // app ID and table → its store
	client *http.Client
}

// storeKey names a table of a query for router.stores; a struct, so a
// lookup builds no string.
type storeKey struct{ appID, table string }

type ownersEntry struct {
	at     time.Time
	owners map[int32]exec.MemberInfo
	// standbys maps a task ("<sub>_<partition>") to the members that
	// keep standby copies of it.
	standbys map[string][]exec.MemberInfo
}

// partitionCount returns the partitions of a store's input topics.
func (e *Engine) partitionCount(ctx context.Context, topics []string) (int32, error) {
	e.route.mu.Lock()
	n, ok := e.route.parts[topics[0]]
	e.route.mu.Unlock()
	if ok {
		return n, nil
	}
	details, err := e.topics.Describe(ctx, topics...)
	if err != nil {
		return 0, err
	}
	for _, t := range topics {
		if d, ok := details[t]; ok && d.Err == nil {
			n = max(n, d.Partitions)
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("topics %v have no partitions", topics)
	}
	e.route.mu.Lock()
	e.route.parts[topics[0]] = n
	e.route.mu.Unlock()
	return n, nil
}

// groupOwners returns, per partition of topics, the member of the
// query's group that owns it.
func (e *Engine) groupOwners(ctx context.Context, appID string, topics []string, fresh bool) (map[int32]exec.MemberInfo, error) {
	ent, err := e.groupMembers(ctx, appID, topics, fresh)
	return ent.owners, err
}

// groupMembers returns the owners of topics' partitions in the query's
// group and the members that keep standby copies of its tasks.
func (e *Engine) groupMembers(ctx context.Context, appID string, topics []string, fresh bool) (ownersEntry, error) {
	e.route.mu.Lock()
	ent, ok := e.route.owners[appID]
	e.route.mu.Unlock()
	if ok && !fresh && time.Since(ent.at) < ownersTTL {
		return ent, nil
	}
	if e.adm == nil {
		return ownersEntry{}, errOffline
	}
	gs, err := e.adm.DescribeGroups(ctx, appID)
	if err != nil {
		return ownersEntry{}, err
	}
	g := gs[appID]
	if g.Err != nil {
		return ownersEntry{}, g.Err
	}
	owners := map[int32]exec.MemberInfo{}
	standbys := map[string][]exec.MemberInfo{}
	for _, m := range g.Members {
		meta, ok1 := m.Join.AsConsumer()
		asg, ok2 := m.Assigned.AsConsumer()
		if !ok1 || !ok2 {
			continue
		}
		mi, err := exec.DecodeMemberInfo(meta.UserData)
		if err != nil {
			continue
		}
		for _, task := range exec.DecodeAssignmentInfo(asg.UserData).Standby {
			standbys[task] = append(standbys[task], mi)
		}
		for _, t := range asg.Topics {
			if !slices.Contains(topics, t.Topic) {
				continue
			}
			for _, p := range t.Partitions {
				owners[p] = mi
			}
		}
	}
	if g.State != "Stable" && ok {
		// A rebalance shows no assignments: keep the last known ones for
		// what it does not show. Stale routing is safe: an instance asked
		// for a partition it no longer has says so.
		for p, o := range ent.owners {
			if _, have := owners[p]; !have {
				owners[p] = o
			}
		}
		for task, ms := range ent.standbys {
			if _, have := standbys[task]; !have {
				standbys[task] = ms
			}
		}
	}
	ent = ownersEntry{at: time.Now(), owners: owners, standbys: standbys}
	e.route.mu.Lock()
	e.route.owners[appID] = ent
	e.route.mu.Unlock()
	return ent, nil
}

// pullPlan is where a pull query's partitions are read: every one this
// instance has here, the others by their owners' endpoints (none of which
// is here).
type pullPlan struct {
	remote map[string][]int32
	// standby are partitions without an active owner, read from standby
	// copies under sr; dead are endpoints of actives that did not answer.
	standby []int32
	dead    []string
	except  []int32 // every partition read elsewhere or from a standby
	sr      standbyRead
	ps      pullStore
	// n is the number of partitions of the store, for
	// exec.KeySelection.Whole.
	n int32
}

// checkHere fails unless this instance has every partition of only (a
// forwarded pull query's) of the store a pull over src reads.
func (e *Engine) checkHere(mat *exec.Query, src *catalog.Source, only []int32) error {
	store, _ := mat.PullStore(src.Name)
	for _, p := range only {
		if has, _ := mat.HasPartition(store, p); !has {
			return sql.Errorf(codeUnavailable, "partition %d of %s is not served by this instance (%s) now", p, src.Name, e.cfg.InstanceID)
		}
	}
	return nil
}

// pullStore is what routing needs of a table's store.
type pullStore struct {
	store  string
	topics []string
	n      int32
}

// storeOf returns the store a pull over src reads, its input topics and
// their partitions.
func (e *Engine) storeOf(ctx context.Context, mat *exec.Query, src *catalog.Source) (pullStore, error) {
	key := storeKey{mat.Topology().AppID, src.Name}
	e.route.mu.Lock()
	ps, ok := e.route.stores[key]
	e.route.mu.Unlock()
	if ok {
		return ps, nil
	}
	ps.store, ps.topics = mat.PullStore(src.Name)
	if len(ps.topics) == 0 {
		return ps, nil
	}
	n, err := e.partitionCount(ctx, ps.topics)
	if err != nil {
		return ps, fmt.Errorf("partitions of %s: %w", src.Name, err)
	}
	ps.n = n
	e.route.mu.Lock()
	e.route.stores[key] = ps
	e.route.mu.Unlock()
	return ps, nil
}

// planPull routes a pull query over src, materialized by mat, reading
// keys (nil: a scan). With every partition here (one instance), it costs
// a few map lookups.
func (e *Engine) planPull(ctx context.Context, mat *exec.Query, src *catalog.Source, keys [][]byte, props map[string]string) (pullPlan, error) {
	sr, err := pullStandbyRead(props)
	if err != nil {
		return pullPlan{}, err
	}
	ps, err := e.storeOf(ctx, mat, src)
	if err != nil || ps.n == 0 {
		return pullPlan{}, err
	}
	var missing []int32
	done := pullPlan{n: ps.n} // every partition needed is here
	if part := mat.PullPartitioner(ps.store); keys != nil && ps.store == src.Name && src.Partitions == ps.n && part.Known() {
		// The table's own store, partitioned as its topic: a key is in
		// the partition its producers' partitioner (or the sink's) gives
		// it.
		for _, k := range keys {
			p := part.Partition(k, ps.n)
			if has, _ := mat.HasPartition(ps.store, p); !has && !slices.Contains(missing, p) {
				missing = append(missing, p)
			}
		}
	} else {
		if _, count := mat.HasPartition(ps.store, -1); int32(count) == ps.n {
			return done, nil // everything is here: the usual case with one instance
		}
		for p := range ps.n {
			if has, _ := mat.HasPartition(ps.store, p); !has {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) == 0 {
		return done, nil
	}
	members, err := e.groupMembers(ctx, mat.Topology().AppID, ps.topics, false)
	if err != nil {
		return pullPlan{}, sql.Errorf(codeUnavailable, "pull query over %s: finding the owners of its partitions: %v", src.Name, err)
	}
	owners := members.owners
	plan := pullPlan{remote: map[string][]int32{}, sr: sr, ps: ps, n: ps.n}
	for _, p := range missing {
		o, ok := owners[p]
		if (!ok || o.Instance == e.cfg.InstanceID) && sr.enabled {
			// No active to ask: a standby within the allowed lag.
			if _, found := e.standbyFor(mat, ps, members, p, sr, nil); found {
				plan.standby = append(plan.standby, p)
				plan.except = append(plan.except, p)
				continue
			}
		}
		switch {
		case !ok:
			e.forgetOwners(mat)
			return pullPlan{}, sql.Errorf(codeUnavailable, "partition %d of %s has no live owner (its query's group is rebalancing, or the instance that had it is down); no partial answer is given: try again", p, src.Name)
		case o.Instance == e.cfg.InstanceID:
			e.forgetOwners(mat)
			return pullPlan{}, sql.Errorf(codeUnavailable, "partition %d of %s is being restored on this instance; no partial answer is given: try again", p, src.Name)
		case o.Endpoint == "":
			return pullPlan{}, sql.Errorf(codeUnavailable, "partition %d of %s is owned by instance %s, which serves no REST endpoint to forward the query to", p, src.Name, o.Instance)
		}
		plan.remote[o.Endpoint] = append(plan.remote[o.Endpoint], p)
		plan.except = append(plan.except, p)
	}
	return plan, nil
}

// pullUnavailable turns the failure of a pull that found a partition it
// needs gone from here (a rebalance since it was planned) or a standby
// copy too far behind into 57P03, which asks the client to try again.
func (e *Engine) pullUnavailable(mat *exec.Query, err error) error {
	if errors.Is(err, exec.ErrPartitionMoved) || errors.Is(err, exec.ErrStandbyLag) {
		e.forgetOwners(mat)
		return sql.Errorf(codeUnavailable, "%v; no partial answer is given: try again", err)
	}
	return err
}

// forgetOwners makes the next pull query ask mat's group again; what
// it knew is kept for a group that is rebalancing (groupMembers).
func (e *Engine) forgetOwners(mat *exec.Query) {
	e.route.mu.Lock()
	if ent, ok := e.route.owners[mat.Topology().AppID]; ok {
		ent.at = time.Time{}
		e.route.owners[mat.Topology().AppID] = ent
	}
	e.route.mu.Unlock()
}

// pullRequest is a forwarded pull query.
type pullRequest struct {
	SQL        string            `json:"sql"`
	Props      map[string]string `json:"props,omitempty"`
	Partitions []int32           `json:"partitions"`
	// Key, when set, runs SQL, a point query prepared with another key,
	// for this key (the JSON value of the key column).
	Key json.RawMessage `json:"key,omitempty"`
	// Params, when set, are the values of SQL's placeholders ($1, …),
	// JSON values of the parameters' types (a prepared statement's Bind).
	Params []json.RawMessage `json:"params,omitempty"`
	// Standby reads the partitions from standby copies at most MaxLag
	// changelog offsets behind (negative: any).
	Standby bool  `json:"standby,omitempty"`
	MaxLag  int64 `json:"max_lag,omitempty"`
}

// pullResponse is its answer: rows of JSON values, one per column.
type pullResponse struct {
	Rows  [][]json.RawMessage `json:"rows"`
	Error string              `json:"error,omitempty"`
}

// forward runs text on the owners of the plan's remote partitions and
// hands their rows to emit, until emit says stop (errLimitReached).
func (e *Engine) forward(ctx context.Context, mat *exec.Query, text string, props map[string]string, cols []types.Column, plan pullPlan, emit func(types.Row) error) error {
	return e.forwardKey(ctx, mat, pullRequest{SQL: text, Props: props}, cols, plan, emit)
}

// forwardKey is forward of a prepared point query run for key.
// forwardKey is forward of a prepared query: base holds its text,
// properties and the key or parameter values it runs with.
func (e *Engine) forwardKey(ctx context.Context, mat *exec.Query, base pullRequest, cols []types.Column, plan pullPlan, emit func(types.Row) error) error {
	if len(plan.remote) == 0 && len(plan.standby) == 0 {
		return nil
	}
	codec, err := newRowCodec(cols)
	if err != nil {
		return err
	}
	row := make(types.Row, len(cols))
	deliver := func(ep string, resp *pullResponse) error {
		for _, r := range resp.Rows {
			if err := codec.decode(r, row); err != nil {
				return fmt.Errorf("a row forwarded by %s: %w", ep, err)
			}
			if err := emit(row); err != nil {
				return err
			}
		}
		return nil
	}
	standby := slices.Clone(plan.standby)
	for _, ep := range sortedKeys(plan.remote) {
		parts := plan.remote[ep]
		req := base
		req.Partitions = parts
		resp, err := e.forwardOne(ctx, ep, req)
		if err != nil {
			e.forgetOwners(mat)
			if plan.sr.enabled {
				// The active does not answer (down, not yet out of the
				// group): its partitions' standbys may.
				standby = append(standby, parts...)
				plan.dead = append(plan.dead, ep)
				continue
			}
			return sql.Errorf(codeUnavailable, "partitions %v are owned by the instance at %s, which did not answer the forwarded pull query: %v; no partial answer is given", parts, ep, err)
		}
		if err := deliver(ep, resp); err != nil {
			return err
		}
	}
	if len(standby) == 0 {
		return nil
	}
	// Standby copies: each partition from the first that answers.
	var read func(parts []int32, exclude []string, depth int) error
	read = func(parts []int32, exclude []string, depth int) error {
		alt, missing := e.standbysOf(ctx, mat, plan, parts, exclude, depth > 0)
		if len(missing) > 0 {
			return sql.Errorf(codeUnavailable, "partitions %v of the table have no live active owner and no standby copy within %s (%d) that answers; no partial answer is given", missing, MaxOffsetLagProp, plan.sr.maxLag)
		}
		for _, ep := range sortedKeys(alt) {
			parts := alt[ep]
			req := base
			req.Partitions, req.Standby, req.MaxLag = parts, true, plan.sr.maxLag
			var resp *pullResponse
			var err error
			if ep == "" {
				resp, err = e.answer(ctx, req)
			} else {
				resp, err = e.forwardOne(ctx, ep, req)
			}
			if err != nil {
				if depth >= 3 {
					return sql.Errorf(codeUnavailable, "partitions %v have no live active owner, and their standby copies do not answer within %s (%d): %v; no partial answer is given", parts, MaxOffsetLagProp, plan.sr.maxLag, err)
				}
				if err := read(parts, append(slices.Clone(exclude), ep), depth+1); err != nil {
					return err
				}
				continue
			}
			if err := deliver(ep, resp); err != nil {
				return err
			}
		}
		return nil
	}
	return read(standby, plan.dead, 0)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string][]int32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (e *Engine) forwardOne(ctx context.Context, endpoint string, req pullRequest) (*pullResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	base := endpoint
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+InternalPullPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if e.cfg.ForwardUser != "" {
		hr.SetBasicAuth(e.cfg.ForwardUser, e.cfg.ForwardPassword)
	}
	res, err := e.route.client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
		return nil, fmt.Errorf("HTTP %d: the instance refused this one's credentials (set --internal-credentials to a user of its --http-auth-users)", res.StatusCode)
	}
	var pr pullResponse
	if err := json.Unmarshal(b, &pr); err != nil {
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	if pr.Error != "" || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, pr.Error)
	}
	return &pr, nil
}

// ServeInternalPull answers a pull query another instance forwarded:
// from this instance's stores of the partitions asked for, each of which
// must be here. It is the handler of InternalPullPath.
func (e *Engine) ServeInternalPull(w http.ResponseWriter, r *http.Request) {
	reply := func(code int, pr pullResponse) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(pr)
	}
	var req pullRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		reply(http.StatusBadRequest, pullResponse{Error: "bad forwarded pull query: " + err.Error()})
		return
	}
	resp, err := e.answer(r.Context(), req)
	if err != nil {
		code := http.StatusServiceUnavailable
		if errors.Is(err, errForwardedRow) {
			code = http.StatusInternalServerError
		}
		reply(code, pullResponse{Error: err.Error()})
		return
	}
	reply(http.StatusOK, *resp)
}

// errForwardedRow marks a row that could not be encoded for the answer.
var errForwardedRow = errors.New("encoding a row")

// answer runs a forwarded pull query here.
func (e *Engine) answer(ctx context.Context, req pullRequest) (*pullResponse, error) {
	s := NewSession()
	for k, v := range req.Props {
		s.Props[k] = v
	}
	var sb *standbyRead
	if req.Standby {
		sb = &standbyRead{enabled: true, maxLag: req.MaxLag}
	}
	rw := &forwardWriter{}
	var err error
	if req.Key != nil || req.Params != nil {
		err = e.pullKeyHere(ctx, s, req, sb, rw)
	} else {
		_, err = e.pullHere(ctx, s, req.SQL, req.Partitions, sb, rw)
	}
	if err != nil {
		return nil, err
	}
	if rw.err != nil {
		return nil, fmt.Errorf("%w: %v", errForwardedRow, rw.err)
	}
	return &pullResponse{Rows: rw.rows}, nil
}

// forwardWriter collects rows for a forwarded pull query's answer.
type forwardWriter struct {
	codec *rowCodec
	rows  [][]json.RawMessage
	err   error
}

func (f *forwardWriter) Columns(cols []types.Column) error {
	c, err := newRowCodec(cols)
	f.codec = c
	return err
}

func (f *forwardWriter) Row(row types.Row) error {
	r, err := f.codec.encode(row)
	if err != nil {
		f.err = err
		return err
	}
	f.rows = append(f.rows, r)
	return nil
}

// pullHere runs a pull query over the given partitions of this
// instance's stores only.
func (e *Engine) pullHere(ctx context.Context, s *Session, text string, parts []int32, sb *standbyRead, w ResultWriter) (Result, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return Result{}, err
	}
	sel, ok := st.(*sql.Select)
	if !ok {
		return Result{}, ErrNotPull
	}
	q, err := sql.BindSelect(sel, e.cat)
	if err != nil {
		return Result{}, err
	}
	if q.Emit != "" {
		return Result{}, ErrNotPull
	}
	return e.pullPartitions(ctx, q, text, w, parts, sb)
}

// pullKeyHere runs a prepared pull query forwarded with its key (a
// point query) or its parameters' values over the partitions of this
// instance's stores req names.
func (e *Engine) pullKeyHere(ctx context.Context, s *Session, req pullRequest, sb *standbyRead, w ResultWriter) error {
	text, parts := req.SQL, req.Partitions
	p, err := e.PreparePull(s, text)
	if err != nil {
		return err
	}
	if req.Key != nil && !p.point {
		return fmt.Errorf("forwarded key for a pull query that does not read one key: %s", text)
	}
	if req.Params != nil {
		if p.params == nil || len(req.Params) != len(p.ptypes) {
			return fmt.Errorf("forwarded %d parameter values for a pull query with %d parameters: %s", len(req.Params), len(p.ptypes), text)
		}
		cols := make([]types.Column, len(p.ptypes))
		for i, t := range p.ptypes {
			cols[i] = types.Column{Name: "P", Type: t}
		}
		c, err := newRowCodec(cols)
		if err != nil {
			return err
		}
		if err := c.decode(req.Params, p.params.Values); err != nil {
			return err
		}
	}
	if parts == nil {
		parts = []int32{}
	}
	p.only, p.sb = parts, sb
	if req.Key == nil {
		_, err = p.Run(ctx, w)
		return err
	}
	c, err := newRowCodec([]types.Column{{Name: "K", Type: p.keyType}})
	if err != nil {
		return err
	}
	k := make(types.Row, 1)
	if err := c.decode([]json.RawMessage{req.Key}, k); err != nil {
		return err
	}
	_, err = p.RunKey(ctx, k[0], w)
	return err
}

// rowCodec turns a result row into JSON values, one per column, and
// back, with the JSON format's codecs of the columns' types.
type rowCodec struct {
	enc []types.Encoder
	dec []types.Decoder
	one types.Row
}

func newRowCodec(cols []types.Column) (*rowCodec, error) {
	c := &rowCodec{one: make(types.Row, 1)}
	unwrapped := false
	for _, col := range cols {
		s := types.Schema{Columns: []types.Column{{Name: "V", Type: col.Type}}}
		o := types.FormatOptions{WrapSingleValue: &unwrapped}
		enc, err := types.NewEncoderOpts(types.FormatJSON, s, []int{0}, o)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col.Name, err)
		}
		dec, err := types.NewDecoderOpts(types.FormatJSON, s, []int{0}, o)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col.Name, err)
		}
		c.enc, c.dec = append(c.enc, enc), append(c.dec, dec)
	}
	return c, nil
}

func (c *rowCodec) encode(row types.Row) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(c.enc))
	for i, enc := range c.enc {
		c.one[0] = row[i]
		b, err := enc.Encode(nil, c.one)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = []byte("null")
		}
		out[i] = b
	}
	return out, nil
}

func (c *rowCodec) decode(vals []json.RawMessage, row types.Row) error {
	if len(vals) != len(c.dec) {
		return fmt.Errorf("%d values for %d columns", len(vals), len(c.dec))
	}
	for i, dec := range c.dec {
		c.one[0] = types.Datum{}
		if err := dec.Decode(vals[i], c.one); err != nil {
			return err
		}
		row[i] = c.one[0]
	}
	return nil
}

// errLimitReached stops merging rows at a pull query's LIMIT.
var errLimitReached = errors.New("limit reached")
