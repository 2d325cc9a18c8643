package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/sql"
)

// The command topic is the catalog's one order. Every instance of a
// service applies every command in that order: at start it replays the
// topic to its end offset, then a follower applies the commands other
// instances write as they arrive.
//
// A statement run here is validated against a catalog caught up to the
// topic's end offset, then appended. When nothing came between (its
// offset is the next one), it is applied at once; when another instance's
// command overtook it, the follower applies both in the topic's order and
// the statement's result is what the follower's apply returned — the same
// result every other instance gets.

// CommandLog is the command topic as the engine uses it:
// catalog.CommandLog on Kafka, enginetest's in memory. Offsets are the
// topic's: each command is written in a transaction of its own, so its
// commit marker takes the next offset.
type CommandLog interface {
	// Topic names the log (SHOW TOPICS hides it, errors name it).
	Topic() string
	// EndOffset is the offset below which every command is decided.
	EndOffset(ctx context.Context) (int64, error)
	// Position is the offset after the last one Read returned.
	Position() int64
	// Read waits (until ctx ends) for the commands after Position and
	// returns them with the new position.
	Read(ctx context.Context) ([]catalog.Entry, int64, error)
	// ReadTo reads the commands below end and calls apply on each.
	ReadTo(ctx context.Context, end int64, apply func(catalog.Entry) error) error
	// Append writes a command and returns its offset.
	Append(ctx context.Context, c catalog.Command) (int64, error)
	// Close releases the log (its clients).
	Close()
}

var _ CommandLog = (*catalog.CommandLog)(nil)

// catchUpTimeout bounds how long a statement waits for the follower to
// apply the commands already in the topic.
const catchUpTimeout = 30 * time.Second

// applyResult is the outcome of applying one command.
type applyResult struct {
	res  Result
	err  error
	done bool
}

// errOvertaken says that a live command was appended after another
// instance's command that this instance had not applied yet: it is
// applied by the follower, in order. No catalog change was made.
type errOvertaken struct{ offset int64 }

func (e *errOvertaken) Error() string {
	return fmt.Sprintf("command at offset %d was overtaken by another instance's command", e.offset)
}

// replay applies the commands in the topic up to its end offset and
// returns how many there were. A command that fails with a statement
// error (as it failed for the instance that wrote it, when another
// instance's command overtook it) is skipped and logged; any other error
// ends the replay. A command recorded before plans that a migration
// command has the plan of is carried out from that plan (the first
// migration command of its offset).
func (e *Engine) replay(ctx context.Context) (int, error) {
	end, err := e.cmds.EndOffset(ctx)
	if err != nil {
		return 0, err
	}
	var entries []catalog.Entry
	err = e.cmds.ReadTo(ctx, end, func(en catalog.Entry) error {
		entries = append(entries, en)
		return nil
	})
	e.applied = e.cmds.Position()
	if err != nil {
		return 0, err
	}
	migrated := map[int64]catalog.Command{}
	for _, en := range entries {
		if m := en.Command.Migrates; en.Err == nil && m != nil && len(en.Command.Plan) > 0 {
			if _, ok := migrated[*m]; !ok {
				migrated[*m] = en.Command
			}
		}
	}
	for _, en := range entries {
		if mc, ok := migrated[en.Offset]; ok && len(en.Command.Plan) == 0 && en.Command.Migrates == nil {
			en.Command.Plan = mc.Plan
		}
		r := e.applyEntry(ctx, en)
		var se *sql.Error
		if r.err != nil && !errors.As(r.err, &se) && en.Err == nil {
			return len(entries), fmt.Errorf("command at offset %d (%q): %w", en.Offset, en.Command.Statement, r.err)
		}
	}
	return len(entries), nil
}

// applyEntry applies a command read from the topic. The caller holds
// e.mu (or is Open).
func (e *Engine) applyEntry(ctx context.Context, en catalog.Entry) applyResult {
	if en.Err != nil {
		e.log.Warn("skipping a record of the command topic", "offset", en.Offset, "err", en.Err)
		return applyResult{err: en.Err, done: true}
	}
	if en.Command.Migrates != nil {
		// A migration command: its plan is used where the command it
		// migrates stands (replay), and changes nothing here.
		return applyResult{res: Result{Tag: "MIGRATE"}, done: true}
	}
	st, err := sql.Parse(en.Command.Statement)
	var res Result
	if err == nil {
		res, err = e.apply(ctx, st, en.Command, en.Offset, false)
	}
	if err != nil {
		e.log.Warn("command failed; skipped as every instance skips it", "offset", en.Offset, "statement", en.Command.Statement, "err", err)
	}
	return applyResult{res: res, err: err, done: true}
}

// startFollowing starts the follower, which applies the commands written
// after the replay until Close.
func (e *Engine) startFollowing() {
	ctx, cancel := context.WithCancel(context.Background())
	e.stopFollow, e.followDone = cancel, make(chan struct{})
	go func() {
		defer close(e.followDone)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			es, pos, err := e.cmds.Read(pctx)
			pcancel()
			if errors.Is(err, kgo.ErrClientClosed) || ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				e.log.Warn("reading the command topic", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			if len(es) == 0 && pos <= e.appliedPos() {
				continue
			}
			e.mu.Lock()
			for _, en := range es {
				if en.Offset < e.applied {
					continue // this instance's own, applied when written
				}
				r := e.applyEntry(ctx, en)
				if w := e.waiting[en.Offset]; w != nil {
					*w = r
				} else if r.err == nil {
					e.log.Info("applied a command of another instance", "offset", en.Offset, "statement", en.Command.Statement)
				}
				e.applied = en.Offset + 1
			}
			e.advance(pos)
			e.mu.Unlock()
		}
	}()
}

// appliedPos returns e.applied.
func (e *Engine) appliedPos() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied
}

// advance moves e.applied to pos and wakes those waiting. The caller
// holds e.mu.
func (e *Engine) advance(pos int64) {
	if pos > e.applied {
		e.applied = pos
	}
	close(e.appliedCh)
	e.appliedCh = make(chan struct{})
}

// waitApplied waits until the commands below offset end are applied. The
// caller holds e.mu; it is released while waiting.
func (e *Engine) waitApplied(ctx context.Context, end int64) error {
	if e.stopFollow == nil {
		return nil // opening: the replay applies in line
	}
	timeout := time.NewTimer(catchUpTimeout)
	defer timeout.Stop()
	for e.applied < end {
		ch := e.appliedCh
		e.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-timeout.C:
			err = fmt.Errorf("the command topic %s was not read up to offset %d within %v (read to %d)", e.cmds.Topic(), end, catchUpTimeout, e.appliedPos())
		}
		e.mu.Lock()
		if err != nil {
			return err
		}
	}
	return nil
}

// catchUp applies every command in the topic up to its end offset. The
// caller holds e.mu.
func (e *Engine) catchUp(ctx context.Context) error {
	if e.cmds == nil {
		return nil
	}
	end, err := e.cmds.EndOffset(ctx)
	if err != nil {
		return fmt.Errorf("reading the command topic's end offset: %w", err)
	}
	return e.waitApplied(ctx, end)
}

// append writes a live command and returns its offset. When another
// instance's command came in between, it returns *errOvertaken: the
// caller must change nothing and let the follower apply it (awaitOwn).
// The caller holds e.mu.
func (e *Engine) append(ctx context.Context, c catalog.Command) (int64, error) {
	off, err := e.cmds.Append(ctx, c)
	if err != nil {
		return 0, err
	}
	if off != e.applied && e.stopFollow != nil {
		e.waiting[off] = &applyResult{}
		return 0, &errOvertaken{offset: off}
	}
	e.applied = off + 1
	return off, nil
}

// awaitOwn waits for the follower to apply this instance's command at
// off and returns its result. The caller holds e.mu.
func (e *Engine) awaitOwn(ctx context.Context, off int64) (Result, error) {
	defer delete(e.waiting, off)
	if err := e.waitApplied(ctx, off+1); err != nil {
		return Result{}, fmt.Errorf("statement written to the command topic at offset %d; applying it here: %w", off, err)
	}
	r := e.waiting[off]
	if r == nil || !r.done {
		return Result{}, fmt.Errorf("statement written to the command topic at offset %d was not applied", off)
	}
	return r.res, r.err
}
