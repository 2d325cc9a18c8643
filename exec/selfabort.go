package exec

import (
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// selfAborts is a stream thread's franz-go logger, there to catch the
// client ending a transaction with an abort it was not asked for.
//
// franz-go (v1.22.3) aborts in EndTransaction(TryCommit), and returns
// nil, when it finds no partition added to the transaction although
// produces were attempted; it logs franzSelfAbort at info. A transaction
// that sends input offsets is committed whatever it finds, so this
// concerns one of output only (a wall-clock punctuation's, such as an
// idle-advanced EMIT FINAL). franz-go finds none added when every
// produce failed (a promise reported it, and the commit was an abort
// already), and also, wrongly, when the produce was the client's first
// to its topic and the client's metadata goroutine was preempted between
// handing the record to its partition and storing the partition (seen
// in the command log: about 1 in 1,000 fresh producers under the race
// detector and two busy CPUs). The records are then written and
// aborted, and the commit reports success: the task manager takes such a
// commit for the abort it was, and the tasks' stores drop its writes.
type selfAborts struct{ seen atomic.Bool }

// franzSelfAbort starts franz-go's log line of such an abort.
const franzSelfAbort = "no produce succeeded in this transaction but produces were attempted"

func (*selfAborts) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (s *selfAborts) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.HasPrefix(msg, franzSelfAbort) {
		s.seen.Store(true)
	}
}
