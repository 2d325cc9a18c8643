package main

// This file is "sqlstreams shell": a client of the server's Postgres wire
// endpoint. On a terminal it prompts with readline (history in
// ~/.sqlstreams_history, statements spanning lines until a semicolon);
// otherwise, or with -f, it runs a script and stops at the first error.
// At the prompt Tab completes keywords and the server's names
// (shell_complete.go); RUN SCRIPT 'file.sql' runs a file's statements the
// way -f does (shell_script.go).
//
// Each statement is sent on its own as a simple-protocol Query. Results
// print as aligned tables (shell_print.go); a push query's rows print as
// they arrive. Ctrl-C while a statement runs sends a CancelRequest, which
// ends the statement and keeps the connection; a second Ctrl-C, or a
// server that does not answer the cancel within cancelGrace, drops the
// connection instead, and the shell reconnects.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/chzyer/readline"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	prompt     = "sqlstreams> "
	contPrompt = "      -> "

	// connectTimeout bounds connecting and reconnecting.
	connectTimeout = 10 * time.Second
	// cancelGrace is how long a statement may go on after its
	// CancelRequest before the shell gives up on the connection.
	cancelGrace = 5 * time.Second
	// idleCheck is how long the connection may sit unused before the
	// shell pings the server ahead of the next statement.
	idleCheck = time.Second
	// codeQueryCanceled is the SQLSTATE of a statement ended by a cancel.
	codeQueryCanceled = "57014"
)

func runShell(args []string) int {
	fs := flag.NewFlagSet("sqlstreams shell", flag.ContinueOnError)
	server := stringFlag(fs, "server", "127.0.0.1:5433", "server's Postgres wire protocol address, host:port")
	file := fs.String("f", "", "run the statements in `file` and exit; stops at the first error")
	httpAddr := stringFlag(fs, "http", "", "server's REST address (host:port or URL) to fetch completion words from, as the web console does; empty fetches them over the Postgres connection")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sqlstreams shell: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	sh := &shell{addr: *server, http: *httpAddr, out: os.Stdout, errw: os.Stderr, sigc: make(chan os.Signal, 1)}
	// Ctrl-C belongs to the running statement, never to the shell; at the
	// prompt readline sees it as a key.
	signal.Notify(sh.sigc, os.Interrupt)
	defer signal.Stop(sh.sigc)
	if err := sh.connect(); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams shell: cannot connect to %s: %v\n", sh.addr, err)
		return 1
	}
	defer sh.close()

	switch {
	case *file != "":
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams shell: %v\n", err)
			return 1
		}
		defer f.Close()
		return sh.script(f)
	case !readline.IsTerminal(int(os.Stdin.Fd())):
		return sh.script(os.Stdin)
	default:
		return sh.interactive()
	}
}

// shell is one connection to the server and where its output goes.
type shell struct {
	addr      string
	http      string    // REST address for completion words, or ""
	conn      *pgx.Conn // nil or closed after a lost connection
	lastUsed  time.Time // when conn last ran a statement or was opened
	out, errw io.Writer
	sigc      chan os.Signal // Ctrl-C
	comp      *completer     // tab completion, at the interactive prompt
	depth     int            // RUN SCRIPT nesting
}

// connect opens the connection to sh.addr.
func (sh *shell) connect() error {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("sqlstreams"),
		Host:     sh.addr,
		Path:     "/sqlstreams",
		RawQuery: "sslmode=disable",
	}
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		fmt.Fprintf(sh.errw, "%s: %s\n", n.Severity, n.Message)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	sh.conn, sh.lastUsed = conn, time.Now()
	return nil
}

func (sh *shell) close() {
	if sh.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		sh.conn.Close(ctx)
	}
}

// interactive reads statements at a readline prompt until Ctrl-D.
func (sh *shell) interactive() int {
	sh.comp = &completer{http: sh.http}
	history := ""
	if home, err := os.UserHomeDir(); err == nil {
		history = filepath.Join(home, ".sqlstreams_history")
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 prompt,
		HistoryFile:            history,
		DisableAutoSaveHistory: true, // a statement is saved whole, not a line at a time
		InterruptPrompt:        "^C",
		EOFPrompt:              "",
		AutoComplete:           sh.comp,
	})
	if err != nil {
		fmt.Fprintf(sh.errw, "sqlstreams shell: %v\n", err)
		return 1
	}
	defer rl.Close()
	fmt.Fprintf(sh.out, "Connected to sqlstreams at %s. End statements with ';'; Ctrl-C cancels a running query, Ctrl-D exits.\n", sh.addr)

	var sp splitter
	var typed []string // lines of the statement being typed, for history
	for {
		if sp.incomplete() {
			rl.SetPrompt(contPrompt)
		} else {
			sh.comp.refresh(sh.conn)
			rl.SetPrompt(prompt)
		}
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			sp.reset()
			typed = nil
			continue
		case errors.Is(err, io.EOF):
			return 0
		case err != nil:
			fmt.Fprintf(sh.errw, "sqlstreams shell: %v\n", err)
			return 1
		}
		if !sp.incomplete() && isQuit(line) {
			return 0
		}
		if !sp.incomplete() {
			if _, ok := runScriptPath(line); ok { // needs no semicolon
				rl.SaveHistory(strings.TrimSpace(line))
				typed = typed[:0]
				sh.runStatement(line)
				continue
			}
		}
		typed = append(typed, strings.TrimSpace(line))
		stmts := sp.add(line)
		if len(stmts) > 0 {
			rl.SaveHistory(strings.Join(typed, " "))
			typed = typed[:0]
			if sp.incomplete() { // the line also began the next statement
				typed = append(typed, strings.TrimSpace(line))
			}
		} else if !sp.incomplete() {
			typed = typed[:0]
		}
		for _, stmt := range stmts {
			sh.runStatement(stmt)
		}
	}
}

// isQuit reports whether line, typed at an empty prompt, asks to leave.
func isQuit(line string) bool {
	switch strings.TrimSuffix(strings.TrimSpace(line), ";") {
	case `\q`, "exit", "quit", "EXIT", "QUIT":
		return true
	}
	return false
}

// script runs the statements read from r in order and returns the exit
// code: 1 at the first failing statement, 130 when interrupted between
// statements. A last statement without a semicolon runs too.
func (sh *shell) script(r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var sp splitter
	runAll := func(stmts []string) int {
		for _, stmt := range stmts {
			select {
			case <-sh.sigc:
				return 130
			default:
			}
			if err := sh.runStatement(stmt); err != nil {
				return 1
			}
		}
		return 0
	}
	for sc.Scan() {
		line := sc.Text()
		if _, ok := runScriptPath(line); ok && !sp.incomplete() {
			if code := runAll([]string{line}); code != 0 { // needs no semicolon
				return code
			}
			continue
		}
		if code := runAll(sp.add(line)); code != 0 {
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(sh.errw, "sqlstreams shell: reading input: %v\n", err)
		return 1
	}
	if stmt := sp.rest(); stmt != "" {
		return runAll([]string{stmt})
	}
	return 0
}

// run sends one statement and prints its result or error. A connection
// that died while the shell was idle (say the server restarted) is found
// by a ping and replaced before the statement goes out; one lost during
// the statement is replaced for the next one.
func (sh *shell) run(stmt string) error {
	if err := sh.ensureConn(); err != nil {
		printError(sh.errw, stmt, err)
		return err
	}
	interrupted, err := sh.runOnce(stmt)
	sh.lastUsed = time.Now()
	switch {
	case err == nil:
	case interrupted && isCanceled(err):
		fmt.Fprintln(sh.errw, "Query cancelled.")
	default:
		printError(sh.errw, stmt, err)
	}
	if sh.conn.IsClosed() {
		fmt.Fprintf(sh.errw, "Connection to %s lost; reconnecting.\n", sh.addr)
		if cerr := sh.connect(); cerr != nil {
			fmt.Fprintf(sh.errw, "ERROR: reconnecting: %v\n", cerr)
		}
	}
	return err
}

// ensureConn makes sure there is a live connection: it connects when
// there is none, and after idleCheck without use it pings the server and
// reconnects if that fails.
func (sh *shell) ensureConn() error {
	if sh.conn != nil && !sh.conn.IsClosed() && time.Since(sh.lastUsed) > idleCheck {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		err := sh.conn.PgConn().Ping(ctx)
		cancel()
		if err != nil {
			sh.conn.Close(context.Background())
			if err := sh.connect(); err == nil {
				fmt.Fprintf(sh.errw, "Reconnected to %s.\n", sh.addr)
			}
		}
	}
	if sh.conn == nil || sh.conn.IsClosed() {
		if err := sh.connect(); err != nil {
			return fmt.Errorf("not connected to %s: %w", sh.addr, err)
		}
	}
	return nil
}

// runOnce sends stmt and prints its result; Ctrl-C meanwhile cancels it,
// and interrupted reports that it came.
func (sh *shell) runOnce(stmt string) (interrupted bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	hit := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		sh.watchInterrupt(sh.conn.PgConn(), cancel, done, hit)
	}()
	err = sh.execute(ctx, stmt)
	close(done)
	<-watching // the next statement's watcher alone reads sh.sigc
	select {
	case <-hit:
		return true, err
	default:
		return false, err
	}
}

// watchInterrupt turns Ctrl-C during a statement into a CancelRequest on
// a side connection. If the statement has not ended cancelGrace later, or
// on a second Ctrl-C, it cancels the statement's context, which closes the
// connection. It closes interrupted on the first Ctrl-C and returns when
// done is closed.
func (sh *shell) watchInterrupt(pc *pgconn.PgConn, cancel context.CancelFunc, done, interrupted chan struct{}) {
	var giveUp <-chan time.Time
	for {
		select {
		case <-done:
			return
		case <-sh.sigc:
			if giveUp != nil {
				cancel()
				continue
			}
			close(interrupted)
			giveUp = time.After(cancelGrace)
			go func() {
				ctx, stop := context.WithTimeout(context.Background(), cancelGrace)
				defer stop()
				if err := pc.CancelRequest(ctx); err != nil {
					cancel()
				}
			}()
		case <-giveUp:
			cancel()
		}
	}
}

// execute sends stmt and prints what comes back: a table per result with
// rows, the command tag for one without.
func (sh *shell) execute(ctx context.Context, stmt string) error {
	mrr := sh.conn.PgConn().Exec(ctx, stmt)
	stream := streams(stmt)
	for mrr.NextResult() {
		if err := sh.printResult(mrr.ResultReader(), stream); err != nil {
			mrr.Close()
			return err
		}
	}
	return mrr.Close()
}

// printResult prints one statement's result. A streamed result prints its
// header at once and each row as it arrives; the footer follows even when
// the stream ends in an error, such as a cancel.
func (sh *shell) printResult(rr *pgconn.ResultReader, stream bool) error {
	fields := rr.FieldDescriptions()
	if fields == nil {
		tag, err := rr.Close()
		if err == nil && tag.String() != "" {
			fmt.Fprintln(sh.out, tag.String())
		}
		return err
	}
	if stream {
		l := newLayout(fields, streamWidth)
		l.header(sh.out)
		n := 0
		for rr.NextRow() {
			row := displayRow(rr.Values())
			l.fit(row)
			l.row(sh.out, row)
			n++
		}
		_, err := rr.Close()
		fmt.Fprintf(sh.out, "%s\n\n", rowCount(n))
		return err
	}
	var rows [][]string
	for rr.NextRow() {
		rows = append(rows, displayRow(rr.Values()))
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	printTable(sh.out, fields, rows)
	return nil
}

// isCanceled reports whether err is a statement ended by a cancel.
func isCanceled(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == codeQueryCanceled
	}
	return errors.Is(err, context.Canceled)
}

// printError writes err as "ERROR: message". When the server gave a
// position in stmt, the line of stmt holding it follows, with a caret
// under the position, as psql shows it.
func printError(w io.Writer, stmt string, err error) {
	if err == nil {
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		fmt.Fprintf(w, "ERROR: %v\n", err)
		return
	}
	fmt.Fprintf(w, "ERROR: %s\n", pgErr.Message)
	if pgErr.Position > 0 {
		n, line, col := lineAt(stmt, int(pgErr.Position))
		prefix := fmt.Sprintf("LINE %d: ", n)
		fmt.Fprintf(w, "%s%s\n%s^\n", prefix, line, caretPad(prefix, line, col))
	}
	if pgErr.Detail != "" {
		fmt.Fprintf(w, "DETAIL: %s\n", pgErr.Detail)
	}
	if pgErr.Hint != "" {
		fmt.Fprintf(w, "HINT: %s\n", pgErr.Hint)
	}
}

// lineAt finds the 1-based character position pos in text and returns its
// 1-based line number, that line's text and pos's 1-based column in it,
// counted in characters. A position past the end points just after the
// last character.
func lineAt(text string, pos int) (n int, line string, col int) {
	runes := []rune(text)
	pos = min(max(pos, 1), len(runes)+1)
	n, start := 1, 0
	for i := 0; i < pos-1; i++ {
		if runes[i] == '\n' {
			n, start = n+1, i+1
		}
	}
	end := start
	for end < len(runes) && runes[end] != '\n' {
		end++
	}
	return n, string(runes[start:end]), pos - start
}

// caretPad is the blank space that puts a caret under column col of line
// printed after prefix; tabs in the line are kept so the caret lines up.
func caretPad(prefix, line string, col int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", width(prefix)))
	for i, r := range []rune(line) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}
