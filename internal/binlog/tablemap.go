package binlog

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/row"
)

// Table_map optional metadata types (binlog_row_metadata=FULL).
const (
	metaSignedness        = 1
	metaColumnCharset     = 3
	metaColumnName        = 4
	metaSetStrValue       = 5
	metaEnumStrValue      = 6
	metaGeometryType      = 7
	metaSimplePrimaryKey  = 8
	metaEnumSetColCharset = 11
)

// TableMapBody builds the body of a Table_map event for a table with the
// given columns and primary key column indexes, with full optional metadata.
func TableMapBody(id uint64, db, table string, cols []row.Column, pk []int) []byte {
	b := appendUint48(nil, id)
	b = append(b, 1, 0) // flags: TM_BIT_LEN_EXACT_F
	b = append(b, byte(len(db)))
	b = append(b, db...)
	b = append(b, 0, byte(len(table)))
	b = append(b, table...)
	b = append(b, 0)
	b = AppendPackedInt(b, uint64(len(cols)))
	for i := range cols {
		b = append(b, cols[i].Type)
	}
	var meta []byte
	for i := range cols {
		meta = append(meta, cols[i].Meta()...)
	}
	b = AppendPackedInt(b, uint64(len(meta)))
	b = append(b, meta...)
	nulls := make([]byte, (len(cols)+7)/8)
	for i := range cols {
		if cols[i].Nullable {
			nulls[i/8] |= 1 << (i % 8)
		}
	}
	b = append(b, nulls...)

	tlv := func(typ byte, v []byte) {
		b = append(b, typ)
		b = AppendPackedInt(b, uint64(len(v)))
		b = append(b, v...)
	}
	// Signedness: one bit per numeric column, most significant bit first.
	var sign []byte
	n := 0
	for i := range cols {
		if !cols[i].IsNumeric() {
			continue
		}
		if n%8 == 0 {
			sign = append(sign, 0)
		}
		if cols[i].Unsigned {
			sign[n/8] |= 0x80 >> (n % 8)
		}
		n++
	}
	if n > 0 {
		tlv(metaSignedness, sign)
	}
	var cs, ecs []byte
	for i := range cols {
		switch {
		case cols[i].IsCharacter():
			cs = AppendPackedInt(cs, uint64(cols[i].Collation))
		case cols[i].Type == row.TypeString:
			ecs = AppendPackedInt(ecs, uint64(max(cols[i].Collation, 255)))
		}
	}
	if len(cs) > 0 {
		tlv(metaColumnCharset, cs)
	}
	var names []byte
	for i := range cols {
		names = AppendPackedInt(names, uint64(len(cols[i].Name)))
		names = append(names, cols[i].Name...)
	}
	tlv(metaColumnName, names)
	var sets, enums []byte
	for i := range cols {
		c := &cols[i]
		if c.Type != row.TypeString {
			continue
		}
		var dst *[]byte
		switch c.RealType {
		case row.TypeSet:
			dst = &sets
		case row.TypeEnum:
			dst = &enums
		default:
			continue
		}
		*dst = AppendPackedInt(*dst, uint64(len(c.Elements)))
		for _, e := range c.Elements {
			*dst = AppendPackedInt(*dst, uint64(len(e)))
			*dst = append(*dst, e...)
		}
	}
	if len(sets) > 0 {
		tlv(metaSetStrValue, sets)
	}
	if len(enums) > 0 {
		tlv(metaEnumStrValue, enums)
	}
	var geoms []byte
	for i := range cols {
		if cols[i].Type == row.TypeGeometry {
			geoms = AppendPackedInt(geoms, uint64(cols[i].Geometry))
		}
	}
	if len(geoms) > 0 {
		tlv(metaGeometryType, geoms)
	}
	if len(pk) > 0 {
		var p []byte
		for _, i := range pk {
			p = AppendPackedInt(p, uint64(i))
		}
		tlv(metaSimplePrimaryKey, p)
	}
	if len(ecs) > 0 {
		tlv(metaEnumSetColCharset, ecs)
	}
	return b
}

// Columns rebuilds, from a Table_map's column types and metadata, the
// columns as far as the row image's encoding depends on them (sizes,
// precisions, pack lengths; not signedness or collation): enough to walk
// the images of the rows events that use the map.
func (m TableMap) Columns() ([]row.Column, error) {
	cols := make([]row.Column, len(m.Types))
	meta := m.Meta
	take := func(n int) ([]byte, error) {
		if len(meta) < n {
			return nil, fmt.Errorf("binlog: table map metadata too short")
		}
		b := meta[:n]
		meta = meta[n:]
		return b, nil
	}
	for i, t := range m.Types {
		c := row.Column{Type: t, Nullable: true}
		var b []byte
		var err error
		switch t {
		case row.TypeTiny, row.TypeShort, row.TypeInt24, row.TypeLong, row.TypeLongLong, row.TypeDate, row.TypeYear:
		case row.TypeFloat, row.TypeDouble:
			_, err = take(1)
		case row.TypeNewDecimal:
			if b, err = take(2); err == nil {
				c.Precision, c.Scale = int(b[0]), int(b[1])
			}
		case row.TypeVarchar:
			if b, err = take(2); err == nil {
				c.MaxBytes = int(b[0]) | int(b[1])<<8
			}
		case row.TypeBlob, row.TypeJSON, row.TypeGeometry:
			if b, err = take(1); err == nil {
				c.PackLen = int(b[0])
			}
		case row.TypeString:
			if b, err = take(2); err == nil {
				switch b[0] {
				case row.TypeEnum, row.TypeSet:
					c.RealType, c.PackLen = b[0], int(b[1])
				default:
					// The high bits of a length over 255 are folded into
					// the type byte (Column.Meta).
					c.RealType = b[0] | 0x30
					c.MaxBytes = int((b[0]&0x30)^0x30)<<4 | int(b[1])
				}
			}
		case row.TypeTimestamp2, row.TypeDateTime2, row.TypeTime2:
			if b, err = take(1); err == nil {
				c.Fsp = int(b[0])
			}
		case row.TypeBit:
			if b, err = take(2); err == nil {
				c.Precision = int(b[1])*8 + int(b[0])
			}
		default:
			return nil, fmt.Errorf("binlog: table map column %d has type %d, which Lockstep does not write", i, t)
		}
		if err != nil {
			return nil, err
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("binlog: table map column %d: %w", i, err)
		}
		cols[i] = c
	}
	return cols, nil
}
