package conformance

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// FileSummary counts one file's results.
type FileSummary struct {
	File string `json:"file"`
	// InScope is the cases not skipped; of them, Records compare output
	// records and Errors expect an error.
	InScope      int `json:"in_scope"`
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Skipped      int `json:"skipped"`
	RecordsTotal int `json:"records_in_scope"`
	RecordsPass  int `json:"records_pass"`
	ErrorsTotal  int `json:"errors_in_scope"`
	ErrorsPass   int `json:"errors_pass"`
	// MessageDiffers counts expected-error cases that failed as wanted
	// with a message not containing ksqlDB's.
	MessageDiffers int `json:"error_message_differs"`
	// SkipReasons counts skipped cases by reason.
	SkipReasons map[string]int `json:"skip_reasons,omitempty"`
}

// Report is the JSON report: per-file summaries, the totals and every
// case's result.
type Report struct {
	Files   []FileSummary `json:"files"`
	Total   FileSummary   `json:"total"`
	Results []Result      `json:"results"`
}

// Summarize builds the report of results.
func Summarize(results []Result) Report {
	byFile := map[string]*FileSummary{}
	var order []string
	total := FileSummary{File: "TOTAL", SkipReasons: map[string]int{}}
	for _, r := range results {
		s, ok := byFile[r.File]
		if !ok {
			s = &FileSummary{File: r.File, SkipReasons: map[string]int{}}
			byFile[r.File] = s
			order = append(order, r.File)
		}
		for _, s := range []*FileSummary{s, &total} {
			switch r.Status {
			case Skip:
				s.Skipped++
				s.SkipReasons[r.Reason]++
				continue
			case Pass:
				s.Pass++
			case Fail:
				s.Fail++
			}
			s.InScope++
			if r.Kind == "error" {
				s.ErrorsTotal++
				if r.Status == Pass {
					s.ErrorsPass++
				}
				if r.MessageDiffers {
					s.MessageDiffers++
				}
			} else {
				s.RecordsTotal++
				if r.Status == Pass {
					s.RecordsPass++
				}
			}
		}
	}
	rep := Report{Total: total, Results: results}
	for _, f := range order {
		rep.Files = append(rep.Files, *byFile[f])
	}
	return rep
}

// WriteTable writes the per-file summary table and the totals.
func (rep Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "file\tin scope\tpass\tfail\tskipped\trecords pass\terrors pass\tskip reasons\t")
	row := func(s FileSummary) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", s.File, s.InScope, s.Pass, s.Fail, s.Skipped,
			ratio(s.RecordsPass, s.RecordsTotal), ratio(s.ErrorsPass, s.ErrorsTotal), reasons(s.SkipReasons))
	}
	for _, s := range rep.Files {
		row(s)
	}
	row(rep.Total)
	tw.Flush()
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.0f%%)", a, b, 100*float64(a)/float64(b))
}

func reasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, "; ")
}

// WriteFailures writes each failed case with its diff.
func (rep Report) WriteFailures(w io.Writer) {
	for _, r := range rep.Results {
		if r.Status != Fail {
			continue
		}
		fmt.Fprintf(w, "FAIL %s: %s (%s)\n", r.File, r.Name, r.Reason)
		for _, l := range strings.Split(r.Detail, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}
