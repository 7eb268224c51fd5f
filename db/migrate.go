package db

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migrations are embedded SQL files named NNNN_description.sql, one set
// per dialect with the same numbers; each applies once, in order, inside
// one transaction with its schema_migrations row.
//
//go:embed migrations
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the migrations of a dialect ("postgres" or
// "sqlite") in version order.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	files, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("db: migrations: %w", err)
	}
	var ms []migration
	for _, f := range files {
		name := f.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("db: migration %q: want NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("db: migration %q: %w", name, err)
		}
		b, err := fs.ReadFile(migrationFS, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("db: migration %q: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(name, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("db: migrations %q and %q share a version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}
