package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sqlstreams/sqlstreams/conformance"
	"github.com/sqlstreams/sqlstreams/sql"
)

// runTest is `sqlstreams test`: ksqlDB's ksql-test-runner form
// (--sql-file, --input-file, --output-file) or its query-validation test
// files (--qtt FILE.json or a directory of them, and more files as
// arguments), or ksqlDB's SQL test files (--test-directory). Exit status 0 when every case in scope passes, 1 when one
// fails, 2 when a file cannot be read.
func runTest(args []string) int {
	fs := flag.NewFlagSet("sqlstreams test", flag.ContinueOnError)
	sqlFile := fs.String("sql-file", "", "ksql-test-runner form: the statements")
	inputFile := fs.String("input-file", "", "ksql-test-runner form: {\"inputs\": [records]}")
	outputFile := fs.String("output-file", "", "ksql-test-runner form: {\"outputs\": [records]}")
	qtt := fs.String("qtt", "", "a query-validation-test JSON file, or a directory of them; more files may follow as arguments")
	rqtt := fs.String("rqtt", "", "a REST query-validation-test JSON file (ksqlDB's rest-query-validation-tests), or a directory of them; run over the REST API")
	sqlTests := fs.String("test-directory", "", "ksqlDB's SQL test files (--@test: blocks with ASSERT statements): a file, or a directory tree of them")
	filter := fs.String("filter", "", "run only cases whose \"file: name\" matches this regular expression")
	report := fs.String("json-report", "", "write the JSON report (summaries and every case's result) to this file")
	parallel := fs.Int("parallel", 0, "cases run at once, each on its own broker and engine (default: the number of CPUs)")
	timeout := fs.Duration("timeout", 60*time.Second, "deadline of one case")
	verbose := fs.Bool("v", false, "print each case's result as it ends")
	logLevel := fs.String("log-level", "", "show the engines' logs at this level (default: none)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sqlstreams test --sql-file q.sql --input-file in.json --output-file out.json\n       sqlstreams test --qtt FILE.json|DIR [FILE.json …] [--filter REGEX] [--json-report r.json]\n       sqlstreams test --rqtt FILE.json|DIR [FILE.json …] [--filter REGEX] [--json-report r.json]\n       sqlstreams test --test-directory FILE.sql|DIR [--filter REGEX]")
		fs.PrintDefaults()
	}
	// Flags may follow the file arguments (--qtt a.json b.json --filter x).
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return 2
		}
		args = fs.Args()
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			files, args = append(files, args[0]), args[1:]
		}
		if len(args) == 0 {
			break
		}
	}
	var cases []conformance.Case
	var restCases []conformance.RestCase
	switch {
	case *rqtt != "":
		if *qtt != "" || *sqlFile != "" || *sqlTests != "" {
			fmt.Fprintln(os.Stderr, "sqlstreams test: give one of --sql-file, --qtt, --rqtt, --test-directory")
			return 2
		}
		files, err := qttFiles(append([]string{*rqtt}, files...))
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
			return 2
		}
		for _, f := range files {
			cs, err := conformance.LoadRQTT(f)
			if err != nil {
				fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
				return 2
			}
			restCases = append(restCases, cs...)
		}
	case *sqlFile != "":
		if *qtt != "" || len(files) > 0 {
			fmt.Fprintln(os.Stderr, "sqlstreams test: give either --sql-file or --qtt, not both")
			return 2
		}
		c, err := conformance.LoadRunner(*sqlFile, *inputFile, *outputFile, sql.Split)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
			return 2
		}
		cases = []conformance.Case{c}
	case *sqlTests != "":
		if *qtt != "" || len(files) > 0 {
			fmt.Fprintln(os.Stderr, "sqlstreams test: give either --test-directory or --qtt, not both")
			return 2
		}
		cs, err := conformance.LoadSQLTests(*sqlTests)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
			return 2
		}
		cases = cs
	case *qtt != "":
		files, err := qttFiles(append([]string{*qtt}, files...))
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
			return 2
		}
		for _, f := range files {
			cs, err := conformance.LoadQTT(f)
			if err != nil {
				fmt.Fprintf(os.Stderr, "sqlstreams test: %v\n", err)
				return 2
			}
			cases = append(cases, cs...)
		}
	default:
		fs.Usage()
		return 2
	}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: --filter: %v\n", err)
			return 2
		}
		kept := cases[:0]
		for _, c := range cases {
			if re.MatchString(c.File + ": " + c.Name) {
				kept = append(kept, c)
			}
		}
		cases = kept
		keptRest := restCases[:0]
		for _, c := range restCases {
			if re.MatchString(c.File + ": " + c.Name) {
				keptRest = append(keptRest, c)
			}
		}
		restCases = keptRest
	}
	opts := conformance.Options{Parallel: *parallel, Timeout: *timeout}
	if *logLevel != "" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: bad --log-level: %v\n", err)
			return 2
		}
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	if *verbose {
		opts.Progress = func(r conformance.Result) {
			fmt.Printf("%-4s %s: %s (%.1fs)", strings.ToUpper(string(r.Status)), r.File, r.Name, r.Seconds)
			if r.Reason != "" {
				fmt.Printf(" [%s]", r.Reason)
			}
			fmt.Println()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []conformance.Result
	if *rqtt != "" {
		results = conformance.RunRQTT(ctx, restCases, opts)
	} else {
		results = conformance.Run(ctx, cases, opts)
	}
	rep := conformance.Summarize(results)
	rep.WriteFailures(os.Stdout)
	rep.WriteTable(os.Stdout)
	if *report != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*report, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams test: --json-report: %v\n", err)
			return 2
		}
	}
	if rep.Total.Fail > 0 {
		return 1
	}
	return 0
}

// qttFiles expands directories into their *.json files, sorted.
func qttFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, errors.New(p + ": no *.json files")
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}
