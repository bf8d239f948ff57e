package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sqlAlchemyKnown are the tests of SQLAlchemy's dialect compliance suite
// (2.0.36, run with its generic SuiteRequirements) that fail against
// Lockstep, by class and test (every parameter set), with their causes;
// docs/COMPATIBILITY.md lists them too.
var sqlAlchemyKnown = map[string]string{
	// These fail against MariaDB 10.11 too: the generic requirements
	// ask for what MySQL's dialect does not do (expressions in LIMIT, a
	// VARCHAR without a length, microseconds in a DATETIME or TIME without
	// a precision, temporal literals read back as temporal values).
	"ComponentReflectionTest.test_get_indexes":                  "fails on MariaDB too",
	"ComponentReflectionTest.test_get_multi_indexes":            "fails on MariaDB too",
	"ComponentReflectionTest.test_get_multi_unique_constraints": "fails on MariaDB too",
	"ComponentReflectionTest.test_get_table_options":            "fails on MariaDB too",
	"ComponentReflectionTest.test_get_view_names":               "fails on MariaDB too",
	"ComponentReflectionTest.test_multi_get_table_options":      "fails on MariaDB too",
	"DateTest.test_select_direct":                               "fails on MariaDB too",
	"DateTimeCoercedToDateTimeTest.test_select_direct":          "fails on MariaDB too",
	"DateTimeMicrosecondsTest.test_round_trip":                  "fails on MariaDB too",
	"DateTimeMicrosecondsTest.test_round_trip_decorated":        "fails on MariaDB too",
	"DateTimeTest.test_select_direct":                           "fails on MariaDB too",
	"FetchLimitOffsetTest.test_expr_limit":                      "fails on MariaDB too",
	"FetchLimitOffsetTest.test_expr_limit_offset":               "fails on MariaDB too",
	"FetchLimitOffsetTest.test_expr_limit_simple_offset":        "fails on MariaDB too",
	"FetchLimitOffsetTest.test_expr_offset":                     "fails on MariaDB too",
	"FetchLimitOffsetTest.test_simple_limit_expr_offset":        "fails on MariaDB too",
	"NumericTest.test_float_custom_scale":                       "fails on MariaDB too",
	"QuotedNameArgumentTest.test_get_table_options":             "fails on MariaDB too",
	"StringTest.test_nolength_string":                           "fails on MariaDB too",
	"TimeMicrosecondsTest.test_round_trip":                      "fails on MariaDB too",
	"TimeMicrosecondsTest.test_round_trip_decorated":            "fails on MariaDB too",
	"TimeMicrosecondsTest.test_select_direct":                   "fails on MariaDB too",
	"TimeTest.test_select_direct":                               "fails on MariaDB too",
}

// TestSQLAlchemySuite runs SQLAlchemy's dialect compliance suite (the
// tests every third-party dialect runs, shipped in its wheel as
// sqlalchemy.testing.suite) through its MySQL dialect and PyMySQL against
// a Lockstep server: every test must pass except the known failures
// above, and a known failure that passes must leave the list.
func TestSQLAlchemySuite(t *testing.T) {
	py := needTool(t, "python3")
	if err := exec.Command(py, "-c", "import sqlalchemy.testing.suite, pymysql, pytest").Run(); err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("SQLAlchemy, PyMySQL and pytest are required (LOCKSTEP_REQUIRE_TOOLS=1)")
		}
		t.Skip("SQLAlchemy, PyMySQL or pytest not installed")
	}
	s := startServer(t, t.TempDir())
	for _, db := range []string{"test", "test_schema", "test_schema_2"} {
		mustExec(t, s.db(""), "CREATE DATABASE "+db)
	}
	dir := t.TempDir()
	files := map[string]string{
		"conftest.py": "from sqlalchemy.dialects import registry  # noqa\nimport pytest\n\n" +
			"pytest.register_assert_rewrite(\"sqlalchemy.testing.assertions\")\n\n" +
			"from sqlalchemy.testing.plugin.pytestplugin import *  # noqa\n",
		"setup.cfg": "[tool:pytest]\naddopts = --tb native -p no:warnings -p no:cacheprovider\n\n" +
			"[sqla_testing]\nrequirement_cls = sqlalchemy.testing.requirements:SuiteRequirements\nprofile_file = profiles.txt\n\n" +
			fmt.Sprintf("[db]\ndefault = mysql+pymysql://root@127.0.0.1:%d/test?charset=utf8mb4\n", s.port),
		"test_suite.py": "from sqlalchemy.testing.suite import *  # noqa\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report := filepath.Join(dir, "report.xml")
	cmd := exec.CommandContext(ctx, py, "-m", "pytest", "-q", "--junitxml="+report, "test_suite.py")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // failures exit non-zero; the report says which
	cases := pytestReport(t, report, out)
	// classname is test_suite.<Class>_mysql+pymysql_<server version>;
	// name is the test, with its parameters in brackets.
	dialect := regexp.MustCompile(`_mysql\+pymysql_[0-9_]+$`)
	r := suiteResult{seen: map[string]bool{}}
	failing := map[string]bool{} // known failures that failed, under some parameters
	for _, c := range cases {
		class := dialect.ReplaceAllString(strings.TrimPrefix(c.Class, "test_suite."), "")
		test := class + "." + strings.SplitN(c.Name, "[", 2)[0]
		r.seen[test] = true
		_, known := sqlAlchemyKnown[test]
		switch {
		case c.Failure != nil || c.Error != nil:
			r.failed++
			failing[test] = true
			if !known {
				r.unexpected = append(r.unexpected, c.Class+"."+c.Name)
			}
		case c.Skipped != nil:
			r.skipped++
		default:
			r.passed++
		}
	}
	// A known failure is fixed when it failed under no parameters.
	for name := range sqlAlchemyKnown {
		if r.seen[name] && !failing[name] {
			r.fixed = append(r.fixed, name)
		}
	}
	judgeSuite(t, "SQLAlchemy", r, 300, sqlAlchemyKnown, "sqlAlchemyKnown", out)
}
