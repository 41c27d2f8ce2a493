package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestSQLiteEmbedded(t *testing.T) {
	files, err := Load(SQLite, "sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || files[0].Version != 1 || files[0].Name != "0001_init.sql" {
		t.Fatalf("files = %+v, want 0001_init.sql first", files)
	}
	// Version numbers are reserved per feature, so there may be gaps while
	// features land in any order; Load sorts and refuses duplicates.
	for i, f := range files {
		if i > 0 && f.Version <= files[i-1].Version {
			t.Errorf("%s: version %d not above %d", f.Name, f.Version, files[i-1].Version)
		}
		if strings.TrimSpace(f.SQL) == "" {
			t.Errorf("%s is empty", f.Name)
		}
	}
	for _, table := range []string{"sessions", "messages", "compactions"} {
		if !strings.Contains(files[0].SQL, "CREATE TABLE "+table+" (") {
			t.Errorf("0001_init.sql does not create %s", table)
		}
	}
}

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"d/0010_ten.sql":   {Data: []byte("ten")},
		"d/0002_two.sql":   {Data: []byte("two")},
		"d/README.md":      {Data: []byte("not a migration")},
		"d/sub/0003_x.sql": {Data: []byte("in a subdirectory")},
	}
	files, err := Load(fsys, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Version != 2 || files[0].SQL != "two" || files[1].Version != 10 || files[1].Name != "0010_ten.sql" {
		t.Errorf("Load = %+v, want 0002 then 0010", files)
	}

	for name, fsys := range map[string]fstest.MapFS{
		"no prefix":   {"d/init.sql": {}},
		"not numeric": {"d/abc_init.sql": {}},
		"zero":        {"d/0000_init.sql": {}},
		"duplicate":   {"d/0001_a.sql": {}, "d/1_b.sql": {}},
		"missing dir": {"e/0001_a.sql": {}},
	} {
		if _, err := Load(fsys, "d"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPostgresEmbedded(t *testing.T) {
	files, err := Load(Postgres, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || files[0].Version != 1 || files[0].Name != "0001_init.sql" {
		t.Fatalf("files = %+v, want 0001_init.sql first", files)
	}
	for _, table := range []string{"sessions", "messages", "compactions"} {
		if !strings.Contains(files[0].SQL, "CREATE TABLE "+table+" (") {
			t.Errorf("0001_init.sql does not create %s", table)
		}
	}
	// A PostgreSQL version means the same schema change as the SQLite file
	// of that number, so both must name it alike.
	lite, err := Load(SQLite, "sqlite")
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[int]string)
	for _, f := range lite {
		names[f.Version] = f.Name
	}
	for _, f := range files {
		if names[f.Version] != f.Name {
			t.Errorf("postgres/%s has no sqlite/ counterpart of the same name (sqlite has %q)", f.Name, names[f.Version])
		}
	}
}
