package protocol

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// TestParseConnAttrs reads the attributes of handshake responses laid
// out each way the capability flags allow, and nothing from one that
// runs short or whose lengths point outside it.
func TestParseConnAttrs(t *testing.T) {
	lenenc := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	attrs := append(lenenc("_client_name"), lenenc("Go-MySQL-Driver")...)
	attrs = append(attrs, append(lenenc("app"), lenenc("billing")...)...)
	want := []ConnAttr{{"_client_name", "Go-MySQL-Driver"}, {"app", "billing"}}
	response := func(caps uint32, auth []byte, db bool) []byte {
		p := binary.LittleEndian.AppendUint32(nil, caps|clientConnectAttrs)
		p = append(p, make([]byte, 28)...) // max packet, charset, filler
		p = append(p, "root\x00"...)
		p = append(p, auth...)
		if db {
			p = append(p, "app\x00"...)
		}
		p = append(p, "caching_sha2_password\x00"...)
		return append(append(p, byte(len(attrs))), attrs...)
	}
	for name, p := range map[string][]byte{
		"lenenc auth data": response(clientPluginAuth|clientPluginAuthLenencData, append([]byte{3}, "abc"...), false),
		"secure auth":      response(clientPluginAuth|clientSecureConnection|clientConnectWithDB, append([]byte{2}, "xy"...), true),
		"NUL auth":         response(clientPluginAuth, []byte("pw\x00"), false),
	} {
		if got := parseConnAttrs(p); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
		if got := parseConnAttrs(p[:len(p)-3]); got != nil {
			t.Errorf("%s cut short: %v", name, got)
		}
	}
	// Lengths of eight bytes that would wrap an int: as the auth data's
	// length, the attributes' total and one attribute's.
	huge := []byte{0xfe, 0x5b, 0x1e, 0x6e, 0xd5, 0x41, 0xde, 0x30, 0xd5}
	plain := response(clientPluginAuth, []byte("pw\x00"), false)
	head := plain[:len(plain)-len(attrs)-1] // up to the attributes' total
	for name, p := range map[string][]byte{
		"auth data": response(clientPluginAuth|clientPluginAuthLenencData, huge, false),
		"total":     append(append(append([]byte(nil), head...), huge...), attrs...),
		"attribute": append(append(append([]byte(nil), head...), 10), huge...),
	} {
		if got := parseConnAttrs(p); got != nil {
			t.Errorf("%s of 2^63 bytes: %v", name, got)
		}
	}
}
