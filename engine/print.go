package engine

import (
	"context"
	"errors"

	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

var printCols = []types.Column{
	{Name: "ROWTIME", Type: types.TimestampType},
	{Name: "PARTITION", Type: types.IntType},
	{Name: "OFFSET", Type: types.BigintType},
	{Name: "KEY", Type: types.StringType},
	{Name: "VALUE", Type: types.StringType},
}

// print tails a topic's raw records (read_committed) until the LIMIT or
// until ctx ends. Keys and values that are not UTF-8 text print as hex.
func (e *Engine) print(ctx context.Context, st *sql.Print, w ResultWriter) (Result, error) {
	topic, err := e.findTopic(ctx, st.Topic, st.Quoted)
	if err != nil {
		var se *sql.Error
		if errors.As(err, &se) {
			return Result{}, sql.NameError(st, se.Code, "%s", se.Msg)
		}
		return Result{}, err
	}
	if err := w.Columns(printCols); err != nil {
		return Result{}, err
	}
	start := kgo.NewOffset().AtEnd()
	if st.FromBeginning {
		start = kgo.NewOffset().AtStart()
	}
	cl, err := e.cfg.Kafka.NewClient(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(start), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	row := make(types.Row, len(printCols))
	var seen, n int64
	var kbuf, vbuf []byte
	for st.Limit < 0 || n < st.Limit {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return Result{}, sql.Errorf(sql.CodeQueryCanceled, "PRINT canceled after %d records", n)
		}
		var werr error
		fs.EachRecord(func(r *kgo.Record) {
			if werr != nil || (st.Limit >= 0 && n >= st.Limit) {
				return
			}
			seen++
			if (seen-1)%st.Interval != 0 {
				return
			}
			kbuf, vbuf = printable(kbuf[:0], r.Key), printable(vbuf[:0], r.Value)
			row[0] = types.Datum{I: r.Timestamp.UnixMilli()}
			row[1] = types.Datum{I: int64(r.Partition)}
			row[2] = types.Datum{I: r.Offset}
			row[3] = types.Datum{B: kbuf, Null: r.Key == nil}
			row[4] = types.Datum{B: vbuf, Null: r.Value == nil}
			n++
			werr = w.Row(row)
		})
		if werr != nil {
			return Result{}, werr
		}
	}
	return Result{Tag: "SELECT " + strconv.FormatInt(n, 10)}, nil
}

// findTopic resolves a PRINT topic name: as written, then (unquoted)
// upper-cased, as ksqlDB names the topics it creates.
func (e *Engine) findTopic(ctx context.Context, name string, quoted bool) (string, error) {
	candidates := []string{name}
	if up := toUpper(name); !quoted && up != name {
		candidates = append(candidates, up)
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		details, err := e.topics.Describe(ctx, candidates...)
		if err != nil {
			return "", err
		}
		for _, c := range candidates {
			d, ok := details[c]
			if ok && d.Err == nil {
				return c, nil
			}
			if ok && d.Err != nil {
				lastErr = d.Err
			}
		}
		if lastErr == nil {
			break // no such topic; a transient error is worth a retry
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		return "", sql.Errorf(sql.CodeUndefinedObject, "topic %s: %v", name, lastErr)
	}
	return "", sql.Errorf(sql.CodeUndefinedObject, "topic %s does not exist", name)
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// printable appends b as text when it is valid UTF-8 without control
// characters, else as 0x-prefixed hex.
func printable(dst, b []byte) []byte {
	ok := utf8.Valid(b)
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' {
			ok = false
			break
		}
	}
	if ok {
		return append(dst, b...)
	}
	const hex = "0123456789abcdef"
	dst = append(dst, "0x"...)
	for _, c := range b {
		dst = append(dst, hex[c>>4], hex[c&15])
	}
	return dst
}
