package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/pingcap/tidb/pkg/parser/format"
)

func newRestoreCtx(sb *strings.Builder) *format.RestoreCtx {
	return format.NewRestoreCtx(format.DefaultRestoreFlags, sb)
}

// intValue reads a non-negative integer literal node, as LIMIT takes.
func intValue(n ast.ExprNode) (int64, bool) {
	v, ok := n.(*driver.ValueExpr)
	if !ok {
		return 0, false
	}
	switch v.Kind() {
	case driver.KindInt64:
		return v.GetInt64(), true
	case driver.KindUint64:
		if u := v.GetUint64(); u <= 1<<63-1 {
			return int64(u), true
		}
	}
	return 0, false
}
