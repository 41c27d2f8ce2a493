// Package migrations holds crow-acp's database schema as embedded, versioned
// SQL files, one directory per backend.
//
// A file is named NNNN_description.sql; NNNN is its version, a positive
// integer. Versions are applied in ascending order, each exactly once, and
// recorded in the backend's schema_migrations table. Published files are never
// edited: a schema change is a new file with the next version.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// SQLite holds the SQLite migrations under the sqlite/ directory.
//
//go:embed sqlite/*.sql
var SQLite embed.FS

// Postgres holds the PostgreSQL migrations under the postgres/ directory.
// Versions mean the same schema change as the SQLite file of that number.
//
//go:embed postgres/*.sql
var Postgres embed.FS

// File is one versioned migration.
type File struct {
	Version int    // from the NNNN prefix of the file name
	Name    string // the file name, e.g. 0001_init.sql
	SQL     string
}

// Load reads every *.sql file in dir of fsys and returns them sorted by
// version. A file whose name has no numeric version prefix, a version below 1,
// or two files with the same version are errors.
func Load(fsys fs.FS, dir string) ([]File, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var files []File
	seen := make(map[int]string)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migrations: %s: name must look like NNNN_description.sql", name)
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("migrations: %s: version %q must be a positive integer", name, prefix)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		files = append(files, File{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Version < files[j].Version })
	return files, nil
}
