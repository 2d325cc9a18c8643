package broker

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	Type    string          `json:"t"` // "offsets" or "commit"
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

func (j *journal) append(e journalEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.last[e.PID] = append(j.last[e.PID], e)
	if e.Type == "commit" {
		// Entries of a producer before its latest commit are settled
		// once that commit is: keep the latest transaction only.
		keep := j.last[e.PID][:0]
		for _, x := range j.last[e.PID] {
			if x.Epoch >= e.Epoch {
				keep = append(keep, x)
			}
		}
		j.last[e.PID] = keep
	}
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
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.EndTxnRequest); r.Commit {
			j.append(journalEntry{Type: "commit", PID: r.ProducerID, Epoch: r.ProducerEpoch})
		}
		return nil, nil, false
	})
}
