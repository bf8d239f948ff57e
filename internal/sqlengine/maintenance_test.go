package sqlengine

import "testing"

func TestMaintenanceOp(t *testing.T) {
	for q, want := range map[string]string{
		"CHECK TABLE t":                      "check",
		"  check tables a.t, b":              "check",
		"checksum table t quick":             "checksum",
		"ANALYZE NO_WRITE_TO_BINLOG TABLE t": "analyze",
		"optimize local table t":             "optimize",
		"REPAIR TABLE t USE_FRM":             "repair",
		"SELECT * FROM t":                    "",
		"CHECK (a > 0)":                      "",
		"checkpoint":                         "",
		"ANALYZE SELECT 1":                   "",
		"/* c */ CHECK TABLE t":              "",
		"COMMIT":                             "",
	} {
		if got := MaintenanceOp(q); got != want {
			t.Errorf("MaintenanceOp(%q) = %q, want %q", q, got, want)
		}
	}
	names, opts, err := maintenanceNames("CHECK TABLE `a`.`t`, u FOR UPGRADE")
	if err != nil || len(names) != 2 || names[0] != [2]string{"a", "t"} || names[1] != [2]string{"", "u"} || !opts["upgrade"] {
		t.Fatalf("names %v, options %v, %v", names, opts, err)
	}
	if _, _, err := maintenanceNames("CHECK TABLE t WITH"); err == nil {
		t.Fatal("an unknown option was accepted")
	}
}
