package storage

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"

	"github.com/lockstepdb/lockstep/internal/row"
)

// CheckTable verifies t's secondary indexes against its rows, as r reads
// them (CHECK TABLE): every row has, in every index, the entry its values
// make, pointing back to it, and every index entry is the one its row
// makes (none is left over or names a row that does not exist). It returns the problems found, at most limit of them; none means
// the table is consistent. Rows that do not decode are problems too.
func CheckTable(r Reader, t *Table, limit int) ([]string, error) {
	var problems []string
	report := func(format string, args ...any) bool {
		problems = append(problems, fmt.Sprintf(format, args...))
		return len(problems) < limit
	}
	rows, err := r.NewIter(t.PrimaryPrefix(), row.PrefixEnd(t.PrimaryPrefix()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var count int64
	var vals []row.Value
	for ok := rows.First(); ok; ok = rows.Next() {
		count++
		vals, err = t.Decode(rows.Value(), vals)
		if err != nil {
			if !report("row %d does not decode: %v", count, err) {
				return problems, nil
			}
			continue
		}
		entries, err := t.IndexEntries(vals, rows.Key())
		if err != nil {
			return nil, err
		}
		for _, ent := range entries {
			var at []byte
			found, err := r.View(ent.Key, func(v []byte) error {
				at = append(at, v...)
				return nil
			})
			if err != nil {
				return nil, err
			}
			name := t.Def.Indexes[ent.Index].Name
			switch {
			case !found:
				if !report("index '%s' has no entry for row %d", name, count) {
					return problems, nil
				}
			case !bytes.Equal(at, ent.Value):
				if !report("index '%s' has the entry of row %d pointing to another row", name, count) {
					return problems, nil
				}
			}
		}
	}
	if err := rows.Error(); err != nil {
		return nil, err
	}
	// Every index entry must be the one its row makes.
	for i := range t.Def.Indexes {
		ok, err := checkEntries(r, t, i, report)
		if err != nil || !ok {
			return problems, err
		}
	}
	return problems, nil
}

// checkEntries checks that each entry of t's index i is the entry of the
// row it names; report returns false once enough problems are found, and
// checkEntries then stops and returns false.
func checkEntries(r Reader, t *Table, i int, report func(string, ...any) bool) (bool, error) {
	it, err := r.NewIter(t.IndexPrefix(i), row.PrefixEnd(t.IndexPrefix(i)))
	if err != nil {
		return false, err
	}
	defer it.Close()
	name := t.Def.Indexes[i].Name
	var vals []row.Value
	for ok := it.First(); ok; ok = it.Next() {
		rowKey := append([]byte(nil), it.Value()...)
		img, found, err := r.Get(rowKey)
		if err != nil {
			return false, err
		}
		if !found || !bytes.HasPrefix(rowKey, t.PrimaryPrefix()) {
			if !report("index '%s' has an entry for a row that does not exist", name) {
				return false, nil
			}
			continue
		}
		if vals, err = t.Decode(img, vals); err != nil {
			continue // reported with the rows
		}
		ents, err := t.IndexEntries(vals, rowKey)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(ents[i].Key, it.Key()) {
			if !report("index '%s' has an entry that its row's values do not make", name) {
				return false, nil
			}
		}
	}
	return true, it.Error()
}

// ChecksumTable is CHECKSUM TABLE's value for t as r reads it: the sum,
// modulo 2^64, of the CRC-32 of each row's image. It depends only on the
// rows' values and columns (not on their keys, which for a table without
// a primary key are the server's own), so two Lockstep servers with the
// same rows give the same value; MySQL's is computed over its own record
// format and differs.
func ChecksumTable(r Reader, t *Table) (uint64, error) {
	it, err := r.NewIter(t.PrimaryPrefix(), row.PrefixEnd(t.PrimaryPrefix()))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var sum uint64
	for ok := it.First(); ok; ok = it.Next() {
		sum += uint64(crc32.ChecksumIEEE(it.Value()))
	}
	return sum, it.Error()
}

// CompactTable compacts the store's range of table t (OPTIMIZE TABLE):
// its rows and indexes are rewritten without the versions and deletions
// that compaction drops.
func (e *Engine) CompactTable(ctx context.Context, t *Table) error {
	return e.db.Compact(ctx, t.TablePrefix(), row.PrefixEnd(t.TablePrefix()), true)
}
