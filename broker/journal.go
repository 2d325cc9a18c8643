package broker

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The commit journal closes a second hole in kfake's crash recovery (see
// doc.go for the first). kfake ends a committing transaction by writing a
// commit marker to each of its partitions, then applying the offsets the
// transaction committed for its consumer group, then logging the end, and
// persists none of that as one step: a process killed in the middle leaves
// some partitions committed and others open, and the group's offsets
// possibly unapplied. The plain repair would then abort the open rest, and
// the consumer would read its input again: output counted twice.
//
// So the broker journals, before kfake handles them, every
// TxnOffsetCommit (the offsets a transaction will commit) and every
// EndTxn that asks to commit. At start, before kfake loads the log, the
// log scan (logscan.go) appends a commit marker to every partition where
// a transaction that had asked to commit is still open: kfake takes a
// transaction it finds open at load for aborted, and a marker written
// after the load would not make its records visible again
// (TestCrashBetweenCommitMarkers). The repair then applies the offsets of
// every transaction that committed (by a marker seen in its scan) to its
// group when the group's committed offsets are behind them. Then the
// journal starts afresh.
const journalFile = "txn-commit-journal.jsonl"

// journalMaxBytes bounds the journal: past it, it is rewritten with the
// newest entries per producer only.
const journalMaxBytes = 8 << 20

type journalEntry struct {
	Type    string          `json:"t"` // "offsets", "commit" or "begin"
	PID     int64           `json:"pid"`
	Epoch   int16           `json:"epoch"`
	Group   string          `json:"group,omitempty"`
	Offsets []journalOffset `json:"offsets,omitempty"`
}

type journalOffset struct {
	Topic     string `json:"topic,omitempty"`
	TopicID   string `json:"topicId,omitempty"` // hex; TxnOffsetCommit v6+ names topics by ID
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type pidEpoch struct {
	pid   int64
	epoch int16
}

// journal is the append-only commit journal. Its writes go to the page
// cache, which survives the process being killed.
type journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	last map[int64][]journalEntry // newest entries per producer, for compaction
}

// readJournal returns the entries of the journal in dir.
func readJournal(dir string) ([]journalEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, journalFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []journalEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a torn last line
		}
		out = append(out, e)
	}
	return out, nil
}

// openJournal starts an empty journal in dir; the previous one is kept as
// <name>.prev, for diagnosis.
func openJournal(dir string) (*journal, error) {
	path := filepath.Join(dir, journalFile)
	_ = os.Rename(path, path+".prev")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &journal{path: path, f: f, last: map[int64][]journalEntry{}}, nil
}

// journalState is what the journal's entries, in order, say of each
// (producer ID, epoch). That pair names one transaction for clients that
// bump the epoch at every EndTxn (KIP-890: EndTxn v5, franz-go's), but
// every transaction of a producer session for older clients (Kafka's
// Java clients before 4.0, librdkafka): for those a "begin" entry, the
// producer's AddPartitionsToTxn or AddOffsetsToTxn after a journaled
// commit (sent only once that EndTxn has ended), says the commit ended
// and that what follows is a new transaction.
type journalState struct {
	// committing holds the pairs whose transaction open at the crash had
	// asked to commit: its markers may be missing on some partitions.
	committing map[pidEpoch]bool
	// offsets holds, in journal order, the TxnOffsetCommit entries of
	// transactions that asked to commit, never those of a transaction
	// that had not (the offsets are applied where the pair committed).
	offsets []journalEntry
}

// foldJournal reads entries in order into a journalState.
func foldJournal(entries []journalEntry) journalState {
	st := journalState{committing: map[pidEpoch]bool{}}
	pending := map[pidEpoch][]int{} // indices of the open transaction's offsets
	var asked []int
	for i, e := range entries {
		k := pidEpoch{e.PID, e.Epoch}
		switch e.Type {
		case "offsets":
			pending[k] = append(pending[k], i)
		case "commit":
			st.committing[k] = true
			asked = append(asked, pending[k]...)
			delete(pending, k)
		case "begin":
			delete(st.committing, k)
			delete(pending, k)
		}
	}
	slices.Sort(asked)
	for _, i := range asked {
		st.offsets = append(st.offsets, entries[i])
	}
	return st
}

func (j *journal) append(e journalEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.appendLocked(e)
}

// begin journals that producer pid (at epoch) begins a transaction, if
// its newest entry is a commit at the same epoch: only then does the
// entry say something (see journalState).
func (j *journal) begin(pid int64, epoch int16) {
	j.mu.Lock()
	defer j.mu.Unlock()
	es := j.last[pid]
	if len(es) == 0 {
		return
	}
	if last := es[len(es)-1]; last.Type != "commit" || last.Epoch != epoch {
		return
	}
	j.appendLocked(journalEntry{Type: "begin", PID: pid, Epoch: epoch})
}

func (j *journal) appendLocked(e journalEntry) {
	// j.last keeps what compaction must keep of a producer: its current
	// transaction's entries. A commit settles the entries before its
	// own transaction's, a begin everything before it.
	es := j.last[e.PID]
	switch e.Type {
	case "commit":
		from := 0
		for i, x := range es {
			if x.Type == "commit" || x.Type == "begin" || x.Epoch != e.Epoch {
				from = i + 1
			}
		}
		es = es[from:]
	case "begin":
		es = es[:0]
	}
	j.last[e.PID] = append(es, e)
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	n, _ := j.f.Write(b)
	j.size += int64(n)
	if j.size > journalMaxBytes {
		j.compactLocked()
	}
}

// compactLocked rewrites the journal with the newest entries per producer.
func (j *journal) compactLocked() {
	tmp := j.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	var size int64
	for _, es := range j.last {
		for _, e := range es {
			b, _ := json.Marshal(e)
			n, _ := f.Write(append(b, '\n'))
			size += int64(n)
		}
	}
	if os.Rename(tmp, j.path) != nil {
		f.Close()
		return
	}
	j.f.Close()
	j.f, j.size = f, size
}

func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.f.Close()
}

// watch journals the transactional requests kfake is about to handle;
// kfake then handles them as usual.
func (j *journal) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.TxnOffsetCommitRequest)
		e := journalEntry{Type: "offsets", PID: r.ProducerID, Epoch: r.ProducerEpoch, Group: r.Group}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				o := journalOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset}
				if t.TopicID != ([16]byte{}) {
					o.TopicID = hex.EncodeToString(t.TopicID[:])
				}
				e.Offsets = append(e.Offsets, o)
			}
		}
		j.append(e)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.AddPartitionsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.AddPartitionsToTxnRequest)
		if r.Version <= 3 {
			j.begin(r.ProducerID, r.ProducerEpoch)
		}
		for _, t := range r.Transactions {
			j.begin(t.ProducerID, t.ProducerEpoch)
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.AddOffsetsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.AddOffsetsToTxnRequest)
		j.begin(r.ProducerID, r.ProducerEpoch)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.Commit {
			j.append(journalEntry{Type: "commit", PID: r.ProducerID, Epoch: r.ProducerEpoch})
		}
		return nil, nil, false
	})
}
