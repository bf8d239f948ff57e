// Package row defines Lockstep's column types and the two encodings every row
// value goes through:
//
//   - the row image: MySQL's binlog row format (a null bitmap followed by each
//     non-NULL value in its binlog encoding). The same bytes are the value of a
//     row in storage and the row image inside Write/Update/Delete_rows events,
//     so committing a transaction copies images into the binlog without
//     re-encoding, and replaying the binlog (crash recovery, replica apply)
//     puts images straight back into storage.
//   - the key: a memcomparable encoding (bytes.Compare order == SQL order
//     under the column's collation) used for primary and secondary index keys.
//
// Values are plain Go values in one canonical form per type (see Value). The
// package knows nothing of SQL planning: collation-aware string keys come from
// a Collator supplied by the caller.
package row

import "fmt"

// MySQL field types as they appear in the binlog (Table_map column types).
const (
	TypeDecimal    byte = 0
	TypeTiny       byte = 1
	TypeShort      byte = 2
	TypeLong       byte = 3
	TypeFloat      byte = 4
	TypeDouble     byte = 5
	TypeNull       byte = 6
	TypeTimestamp  byte = 7
	TypeLongLong   byte = 8
	TypeInt24      byte = 9
	TypeDate       byte = 10
	TypeTime       byte = 11
	TypeDateTime   byte = 12
	TypeYear       byte = 13
	TypeVarchar    byte = 15
	TypeBit        byte = 16
	TypeTimestamp2 byte = 17
	TypeDateTime2  byte = 18
	TypeTime2      byte = 19
	TypeJSON       byte = 245
	TypeNewDecimal byte = 246
	TypeEnum       byte = 247
	TypeSet        byte = 248
	TypeTinyBlob   byte = 249
	TypeMediumBlob byte = 250
	TypeLongBlob   byte = 251
	TypeBlob       byte = 252
	TypeVarString  byte = 253
	TypeString     byte = 254
	TypeGeometry   byte = 255
)

// CollationBinary is MySQL's id of the "binary" collation/charset (63).
const CollationBinary = 63

// Column describes one column as storage and the binlog see it.
//
// Type is the binlog type (for CHAR/BINARY/ENUM/SET it is TypeString and
// RealType says which). The fields that matter depend on the type:
//
//	integers        Unsigned
//	DECIMAL         Precision, Scale
//	temporal        Fsp (fractional seconds precision, 0..6)
//	CHAR/VARCHAR    MaxBytes (maximum length in bytes), Collation
//	TEXT/BLOB       PackLen (1 tiny, 2 blob, 3 medium, 4 long), Collation
//	ENUM/SET        Elements (for the table map), PackLen
//	BIT             Precision (the number of bits, 1..64)
//	JSON            PackLen (always 4)
//	GEOMETRY        PackLen (always 4), Geometry; the value is MySQL's
//	                internal form, a 4-byte little-endian SRID then the WKB
type Column struct {
	Name      string `json:"name"`
	Type      byte   `json:"type"`
	RealType  byte   `json:"real_type,omitempty"`
	Nullable  bool   `json:"nullable,omitempty"`
	Unsigned  bool   `json:"unsigned,omitempty"`
	Precision int    `json:"precision,omitempty"`
	Scale     int    `json:"scale,omitempty"`
	Fsp       int    `json:"fsp,omitempty"`
	MaxBytes  int    `json:"max_bytes,omitempty"`
	PackLen   int    `json:"pack_len,omitempty"`
	Collation uint16 `json:"collation,omitempty"`
	// Elements are the ENUM or SET member names, in definition order.
	Elements []string `json:"elements,omitempty"`
	// Geometry is a GEOMETRY column's kind, as the table map's
	// GEOMETRY_TYPE metadata gives it (MySQL's Field::geometry_type).
	Geometry GeometryKind `json:"geometry,omitempty"`
}

// GeometryKind is the kind of value a spatial column holds.
type GeometryKind byte

// MySQL's geometry kinds (Field::geometry_type, and the WKB type numbers).
const (
	GeometryAny GeometryKind = iota
	GeometryPoint
	GeometryLineString
	GeometryPolygon
	GeometryMultiPoint
	GeometryMultiLineString
	GeometryMultiPolygon
	GeometryCollection
)

// IsText reports whether the column holds character data with a collation
// other than binary (compared by collation weights).
func (c *Column) IsText() bool {
	return c.IsCharacter() && c.Collation != CollationBinary
}

// IsCharacter reports whether the column is a string or blob column whose
// charset the table map's COLUMN_CHARSET metadata lists (MySQL's
// is_character_type: CHAR, VARCHAR, TEXT and BLOB, not ENUM/SET).
func (c *Column) IsCharacter() bool {
	switch c.Type {
	case TypeVarchar, TypeVarString, TypeBlob:
		return true
	case TypeString:
		return c.RealType == TypeString || c.RealType == 0
	}
	return false
}

// IsNumeric reports whether the column's signedness appears in the table
// map's SIGNEDNESS metadata.
func (c *Column) IsNumeric() bool {
	switch c.Type {
	case TypeTiny, TypeShort, TypeInt24, TypeLong, TypeLongLong,
		TypeFloat, TypeDouble, TypeNewDecimal:
		return true
	}
	return false
}

// Meta returns the column's binlog metadata bytes as written in a Table_map
// event.
func (c *Column) Meta() []byte {
	switch c.Type {
	case TypeFloat:
		return []byte{4}
	case TypeDouble:
		return []byte{8}
	case TypeNewDecimal:
		return []byte{byte(c.Precision), byte(c.Scale)}
	case TypeVarchar, TypeVarString:
		return []byte{byte(c.MaxBytes), byte(c.MaxBytes >> 8)}
	case TypeBlob, TypeGeometry, TypeJSON:
		return []byte{byte(c.PackLen)}
	case TypeString:
		rt := c.realType()
		switch rt {
		case TypeEnum, TypeSet:
			return []byte{rt, byte(c.PackLen)}
		}
		// MySQL packs the high two bits of lengths >255 into the type byte.
		n := c.MaxBytes
		return []byte{rt ^ byte((n&0x300)>>4), byte(n)}
	case TypeTimestamp2, TypeDateTime2, TypeTime2:
		return []byte{byte(c.Fsp)}
	case TypeBit:
		// MySQL's Field_bit: the bits beyond whole bytes, then the bytes.
		return []byte{byte(c.Precision % 8), byte(c.Precision / 8)}
	}
	return nil
}

// bitBytes is the size of a BIT column's value: (M+7)/8 bytes.
func (c *Column) bitBytes() int { return (c.Precision + 7) / 8 }

func (c *Column) realType() byte {
	if c.RealType == 0 {
		return TypeString
	}
	return c.RealType
}

// Validate checks that the column is one this package can encode.
func (c *Column) Validate() error {
	switch c.Type {
	case TypeTiny, TypeShort, TypeInt24, TypeLong, TypeLongLong, TypeFloat, TypeDouble,
		TypeDate, TypeYear:
		return nil
	case TypeNewDecimal:
		if c.Precision < 1 || c.Precision > 65 || c.Scale < 0 || c.Scale > 30 || c.Scale > c.Precision {
			return fmt.Errorf("column %q: invalid DECIMAL(%d,%d)", c.Name, c.Precision, c.Scale)
		}
		return nil
	case TypeBit:
		if c.Precision < 1 || c.Precision > 64 {
			return fmt.Errorf("column %q: invalid BIT(%d)", c.Name, c.Precision)
		}
		return nil
	case TypeTimestamp2, TypeDateTime2, TypeTime2:
		if c.Fsp < 0 || c.Fsp > 6 {
			return fmt.Errorf("column %q: invalid fractional seconds precision %d", c.Name, c.Fsp)
		}
		return nil
	case TypeVarchar:
		if c.MaxBytes < 0 || c.MaxBytes > 65535 {
			return fmt.Errorf("column %q: VARCHAR too long (%d bytes)", c.Name, c.MaxBytes)
		}
		return nil
	case TypeJSON, TypeGeometry:
		if c.PackLen != 4 {
			return fmt.Errorf("column %q: invalid pack length %d", c.Name, c.PackLen)
		}
		return nil
	case TypeBlob:
		if c.PackLen < 1 || c.PackLen > 4 {
			return fmt.Errorf("column %q: invalid blob pack length %d", c.Name, c.PackLen)
		}
		return nil
	case TypeString:
		switch c.realType() {
		case TypeString:
			if c.MaxBytes < 0 || c.MaxBytes > 1020 {
				return fmt.Errorf("column %q: CHAR too long (%d bytes)", c.Name, c.MaxBytes)
			}
			return nil
		case TypeEnum:
			if c.PackLen != 1 && c.PackLen != 2 {
				return fmt.Errorf("column %q: invalid ENUM pack length %d", c.Name, c.PackLen)
			}
			return nil
		case TypeSet:
			if c.PackLen < 1 || c.PackLen > 8 {
				return fmt.Errorf("column %q: invalid SET pack length %d", c.Name, c.PackLen)
			}
			return nil
		}
	}
	return fmt.Errorf("column %q: binlog type %d is not supported", c.Name, c.Type)
}

// lenPrefixBytes is the size of the length prefix of a CHAR/VARCHAR value.
func (c *Column) lenPrefixBytes() int {
	if c.MaxBytes > 255 {
		return 2
	}
	return 1
}
