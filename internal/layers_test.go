// Package internal_test holds the rules of the import graph, checked.
package internal_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/lockstepdb/lockstep/internal/"

// layers orders the packages under internal/: a package imports only
// packages of lower layers. The write path reads bottom up: rows and
// locks, the binlog, storage and the raft log, the commit pipeline,
// transactions and the replication source, the replica, the cluster,
// SQL, and the server on top.
var layers = map[string]int{
	"row": 0, "lock": 0, "elle": 0, "mariadb": 0, "certify": 0, "netns": 0, "icuregex": 0, "loopback": 0, "child": 0,
	"atomicfile": 1, "launch": 1,
	"tlscert": 2, "binlog": 2,
	"storage": 3, "raftlog": 3, "failover": 3,
	"commit": 4,
	"txn":    5, "source": 5,
	"replica":  6,
	"cluster":  7,
	"mysqlerr": 8, "digest": 8, "protocol": 8, "routine": 8,
	"sqlengine": 9,
	"metrics":   10, "dashboard": 10, "admin": 10,
	"server":  11,
	"loadgen": 12, "workload": 12,
	"bench": 13, "integration": 13,
}

// sqlLayer is the first layer that may know SQL (go-mysql-server and its
// vitess: MySQL's errors, the parser): storage, the pipeline,
// transactions, replication and the cluster do not.
const sqlLayer = 8

// TestImportRules fails when a package imports one of a higher (or its
// own) layer, when a layer below SQL imports go-mysql-server or its
// vitess, or when Pebble itself (not its vfs) is imported outside storage.
func TestImportRules(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		pkg := d.Name()
		layer, known := layers[pkg]
		if !known {
			t.Errorf("internal/%s is in no layer: add it to layers in this file", pkg)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				switch {
				case strings.HasPrefix(path, module):
					dep := strings.SplitN(strings.TrimPrefix(path, module), "/", 2)[0]
					dl, ok := layers[dep]
					if ok && dl >= layer {
						t.Errorf("%s imports %s: internal/%s (layer %d) may only import lower layers, and %s is layer %d", f, path, pkg, layer, dep, dl)
					}
				case strings.HasPrefix(path, "github.com/dolthub/") && layer < sqlLayer:
					t.Errorf("%s imports %s: internal/%s sits below SQL and must not know go-mysql-server", f, path, pkg)
				case strings.HasPrefix(path, "github.com/cockroachdb/pebble") && !strings.HasPrefix(path, "github.com/cockroachdb/pebble/v2/vfs") && pkg != "storage":
					t.Errorf("%s imports %s: only internal/storage uses Pebble; read through storage.Reader", f, path)
				}
			}
		}
	}
}
