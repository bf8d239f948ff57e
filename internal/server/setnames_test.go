package server

import (
	"strings"
	"testing"
)

func TestRewriteSetNames(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"SET NAMES utf8mb4", "SET NAMES utf8mb4, collation_connection = 'utf8mb4_0900_ai_ci'", ""},
		{"SET NAMES 'utf8mb4';", "SET NAMES 'utf8mb4', collation_connection = 'utf8mb4_0900_ai_ci';", ""},
		{"SET NAMES latin1", "SET NAMES latin1", ""},
		{"SET NAMES DEFAULT", "SET NAMES DEFAULT", ""},
		{"SET autocommit = 1", "SET autocommit = 1", ""},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_bin", "SET NAMES utf8mb4, collation_connection = 'utf8mb4_bin'", ""},
		{"set names 'latin1' collate \"latin1_bin\", autocommit=0", "set names 'latin1', collation_connection = 'latin1_bin', autocommit=0", ""},
		{"SET NAMES utf8mb4 COLLATE latin1_bin", "", "1253"},
		{"SET NAMES utf8mb4 COLLATE nope_ci", "", "1273"},
	} {
		got, err := rewriteSetNames(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want error %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}
