package layers

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"testing"
)

// TestServerBuildsOffLinux: the servers type-check for macOS without cgo,
// as `GOOS=darwin CGO_ENABLED=0 go vet ./server/...` does. The Linux-only
// parts (pgwire's epoll serving loop and spin reader, the broker's
// syncfs) are build-tagged with a plain path beside them, and RocksDB's
// binding is behind cgo (state/rocks_nocgo.go). Type-checking from
// source costs a fraction of cross-compiling.
func TestServerBuildsOffLinux(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the servers and their dependencies from source")
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "darwin", "arm64", false
	// The source importer reads go/build's default context.
	saved := build.Default
	build.Default = ctx
	defer func() { build.Default = saved }()
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil).(types.ImporterFrom)
	for _, dir := range []string{"server/pgwire", "server/rest", "server/console", "broker"} {
		bp, err := ctx.ImportDir(filepath.Join("..", "..", dir), 0)
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, name := range bp.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: imp, Error: func(err error) { t.Errorf("%s for darwin: %v", dir, err) }}
		conf.Check("github.com/sqlstreams/sqlstreams/"+dir, fset, files, nil)
	}
}
