package conformance

import (
	"regexp"
	"strings"
)

// Skips name what a later issue will remove; a case is skipped only for
// one of these reasons.
const (
	reasonJoins   = "joins (issue 15)"
	reasonTestUDF = "UDF from ksqlDB's test jar"
	// reasonBeyond marks a case that expects ksqlDB to refuse what this
	// repository runs on purpose (the joins issue's "beyond ksqlDB").
	reasonBeyond = "beyond ksqlDB: several foreign-key joins in one query"
)

// testJarFunctions are the UDFs, UDAFs and UDTFs ksqlDB's functional tests
// load from their own test jar; no ksqlDB user has them.
var testJarFunctions = regexp.MustCompile(`(?i)\b(test_udf|test_udaf|test_udtf|bad_test_udf|bad_test_udaf|bad_test_udtf|bad_udf|throwing_udtf|tostruct|tolist|tomap|tostring|multiply2?|backward_concat|whencondition|whenresult|var_arg|mid_var_arg|generic_var_arg|obj_col_arg|multi_arg|four_arg|five_arg|decimalstruct|returndecimal|returnincompatible|ksqlstructudf|complexfunction|configurableudf|e2econfigurableudf|summary_stats|rawlistreturn|bigdecimalnoschemaprovider|badreturnudtf|somefunction)\s*\(`)

// staticSkip returns a reason to skip c before running it, or "".
func staticSkip(c *Case) string {
	if c.Expected != nil && strings.Contains(c.Expected.Message, "foreign-key table-table joins are not supported as part of n-way joins") {
		return reasonBeyond
	}
	for _, s := range c.Statements {
		if testJarFunctions.MatchString(s) {
			return reasonTestUDF
		}
	}
	return ""
}

var notSupported = regexp.MustCompile(`(?i)not (yet )?supported|unsupported`)

// skipFor returns a reason to skip a case whose statement failed with
// err, when the failure is a feature this repository does not have yet
// and a later issue adds (a join the engine refuses as not supported,
// such as a foreign-key join); "" when it is a plain failure.
func skipFor(stmt string, err error) string {
	msg := err.Error()
	upper := strings.ToUpper(stmt)
	if strings.Contains(upper, " JOIN ") && notSupported.MatchString(msg) {
		switch {
		case strings.Contains(msg, "keys are not supported") || strings.Contains(msg, "keys of several columns are not supported"):
			// Joins on schema-registry keys run; what is left is key
			// formats without a join (NONE, PROTOBUF_NOSR) and
			// composite keys in those formats.
			return reasonJoins + ": key format"
		case strings.Contains(msg, "windowed sources"):
			return reasonJoins + ": windowed sources"
		case strings.Contains(msg, "more than two") || strings.Contains(msg, "result of another join"):
			return reasonJoins + ": N-way shape"
		}
		return reasonJoins
	}
	return ""
}

// classify names a failure's class for the summary.
func classify(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "does not exist") && strings.Contains(strings.ToLower(msg), "function"):
		return "unknown function"
	case notSupported.MatchString(msg):
		return "not supported"
	case strings.Contains(msg, "syntax error") || strings.Contains(msg, "parse"):
		return "parse error"
	}
	return "statement error"
}
