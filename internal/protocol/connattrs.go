package protocol

import (
	"encoding/binary"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Connection attributes: the key-value pairs a client sends in its
// handshake response (CLIENT_CONNECT_ATTRS: _client_name, _os, _pid,
// program_name, and the application's own), which MySQL shows in
// performance_schema.session_connect_attrs and
// session_account_connect_attrs. vitess reads them and drops them; the
// wire layer sees the response in plain text (TLS ends below it, see
// wire.go) and keeps them on the connection.

// Capability flags of the handshake response that decide its layout.
const (
	clientConnectWithDB        = 0x00000008
	clientSecureConnection     = 0x00008000
	clientPluginAuth           = 0x00080000
	clientConnectAttrs         = 0x00100000
	clientPluginAuthLenencData = 0x00200000
)

// ConnAttr is one attribute.
type ConnAttr struct{ Name, Value string }

// parseConnAttrs returns the attributes of a HandshakeResponse41 payload
// (without its packet header), or nil if it has none or does not read as
// one.
func parseConnAttrs(p []byte) []ConnAttr {
	if len(p) < 32 {
		return nil
	}
	caps := binary.LittleEndian.Uint32(p)
	if caps&clientConnectAttrs == 0 {
		return nil
	}
	pos := 32 // capabilities, max packet, character set, filler
	skipNUL := func() bool {
		for pos < len(p) {
			pos++
			if p[pos-1] == 0 {
				return true
			}
		}
		return false
	}
	if !skipNUL() { // user name
		return nil
	}
	switch {
	case caps&clientPluginAuthLenencData != 0:
		n, ok := readLenenc(p, &pos)
		if !ok || !fits(p, pos, n) {
			return nil
		}
		pos += int(n)
	case caps&clientSecureConnection != 0:
		if pos >= len(p) || !fits(p, pos+1, uint64(p[pos])) {
			return nil
		}
		pos += 1 + int(p[pos])
	default:
		if !skipNUL() {
			return nil
		}
	}
	if caps&clientConnectWithDB != 0 && !skipNUL() {
		return nil
	}
	if caps&clientPluginAuth != 0 && !skipNUL() {
		return nil
	}
	total, ok := readLenenc(p, &pos)
	if !ok || !fits(p, pos, total) {
		return nil
	}
	end := pos + int(total)
	var out []ConnAttr
	for pos < end {
		k, ok1 := readLenencString(p[:end], &pos)
		v, ok2 := readLenencString(p[:end], &pos)
		if !ok1 || !ok2 {
			return nil
		}
		out = append(out, ConnAttr{k, v})
	}
	return out
}

// readLenenc reads a length-encoded integer at *pos.
func readLenenc(p []byte, pos *int) (uint64, bool) {
	if *pos > len(p) {
		return 0, false
	}
	v, n, err := binlog.ReadPackedInt(p[*pos:])
	if err != nil {
		return 0, false
	}
	*pos += n
	return v, true
}

// fits reports whether n bytes start at pos within p. The length came
// off the wire and may be any 64-bit value, so it is compared unsigned
// with what is left, never added to pos first.
func fits(p []byte, pos int, n uint64) bool {
	return pos <= len(p) && n <= uint64(len(p)-pos)
}

// readLenencString reads a length-encoded string at *pos.
func readLenencString(p []byte, pos *int) (string, bool) {
	n, ok := readLenenc(p, pos)
	if !ok || !fits(p, *pos, n) {
		return "", false
	}
	s := string(p[*pos : *pos+int(n)])
	*pos += int(n)
	return s, true
}
