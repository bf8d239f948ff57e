package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/atomicfile"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Components, as MySQL's INSTALL COMPONENT and UNINSTALL COMPONENT load
// and unload them. The one Lockstep has is component_validate_password
// (sqlengine/passwordpolicy.go): installing it turns the password policy
// on. Which components are installed is kept in <datadir>/components.json
// (MySQL keeps it in the mysql.component table) and restored at start; it
// is local to the server and not replicated, as in MySQL, so each replica
// or cluster member installs its own.
//
// INSTALL needs INSERT on mysql.component and UNINSTALL needs DELETE on
// it, as in MySQL (1142 otherwise). A statement naming a component that
// does not exist or is already installed is refused whole with 3529; one
// naming a component not installed, with 3537. The SET clause of INSTALL
// COMPONENT (MySQL 8.0.33) is refused (1235): install, then SET GLOBAL.

const componentsFile = "components.json"

// knownComponents are the components this server has, by URN.
var knownComponents = map[string]func(on bool){
	"file://component_validate_password": sqlengine.SetPasswordValidation,
}

const (
	erComponentsCantLoad        = 3529 // ER_COMPONENTS_CANT_LOAD
	erComponentsUnloadNotLoaded = 3537 // ER_COMPONENTS_UNLOAD_NOT_LOADED
)

var componentStatement = regexp.MustCompile(`(?is)^\s*(install|uninstall)\s+component\s+(.*?)\s*;?\s*$`)

// componentURN is one quoted URN of the list, and the comma after it.
var componentURN = regexp.MustCompile(`^\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*(,?)`)

// componentsState is the file's content.
type componentsState struct {
	Installed []string `json:"installed"`
}

// loadComponents installs the components the data directory lists. A
// damaged or unknown entry stops the start: running without a password
// policy that was installed would weaken the server unnoticed.
func (s *Server) loadComponents() error {
	path := filepath.Join(s.cfg.DataDir, componentsFile)
	b, err := atomicfile.ReadChecked(vfs.Default, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st componentsState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s is damaged: %w", path, err)
	}
	for _, urn := range st.Installed {
		on, ok := knownComponents[urn]
		if !ok {
			return fmt.Errorf("%s lists %q, a component this server does not have", path, urn)
		}
		on(true)
	}
	s.components = st.Installed
	return nil
}

// componentStatement runs INSTALL COMPONENT and UNINSTALL COMPONENT.
func (s *Server) componentStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 7 || (!strings.EqualFold(q[:7], "install") && !strings.EqualFold(q[:7], "uninsta")) {
		return nil, false, nil
	}
	m := componentStatement.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	install := strings.EqualFold(m[1], "install")
	urns, rest, err := parseComponentURNs(m[2])
	if err != nil {
		return nil, true, err
	}
	if rest != "" {
		if install && strings.EqualFold(strings.Fields(rest)[0], "set") {
			return nil, true, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'INSTALL COMPONENT ... SET': install the component, then SET GLOBAL its variables")
		}
		return nil, true, mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; near '%s'", rest)
	}
	priv, word := sql.PrivilegeType_Insert, "INSERT"
	if !install {
		priv, word = sql.PrivilegeType_Delete, "DELETE"
	}
	if !s.holdsOnTable(c, priv, "mysql", "component") {
		u, _ := c.UserData.(sql.MysqlConnectionUser)
		return nil, true, mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table 'component'", word, u.User, u.Host)
	}
	s.componentsMu.Lock()
	defer s.componentsMu.Unlock()
	next := slices.Clone(s.components)
	for i, urn := range urns {
		_, known := knownComponents[urn]
		has := slices.Contains(next, urn)
		switch {
		case install && (!known || has || slices.Contains(urns[:i], urn)):
			return nil, true, mysql.NewSQLError(erComponentsCantLoad, "HY000", "Cannot load component from specified URN: '%s'.", urn)
		case !install && !has:
			return nil, true, mysql.NewSQLError(erComponentsUnloadNotLoaded, "HY000", "Component specified by URN '%s' to unload has not been loaded before.", urn)
		case install:
			next = append(next, urn)
		default:
			next = slices.DeleteFunc(next, func(u string) bool { return u == urn })
		}
	}
	b, _ := json.Marshal(componentsState{Installed: next})
	if err := atomicfile.WriteChecked(vfs.Default, filepath.Join(s.cfg.DataDir, componentsFile), b); err != nil {
		return nil, true, mysql.NewSQLError(mysql.ERUnknownError, "HY000", "could not record the installed components: %v", err)
	}
	for _, urn := range urns {
		knownComponents[urn](install)
	}
	s.components = next
	return &sqltypes.Result{}, true, nil
}

// parseComponentURNs reads 'urn' [, 'urn'] ... and returns what follows.
func parseComponentURNs(list string) (urns []string, rest string, err error) {
	for {
		m := componentURN.FindStringSubmatchIndex(list)
		if m == nil {
			if len(urns) == 0 || list == "" {
				return nil, "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; a component is named by a quoted URN, such as 'file://component_validate_password'")
			}
			return urns, strings.TrimSpace(list), nil
		}
		var urn string
		if m[2] >= 0 {
			urn = list[m[2]:m[3]]
		} else {
			urn = list[m[4]:m[5]]
		}
		urns = append(urns, urn)
		sep := list[m[6]:m[7]]
		list = list[m[1]:]
		if sep == "" {
			return urns, strings.TrimSpace(list), nil
		}
	}
}

// holdsOnTable reports whether c's account (with its roles) holds priv on
// db.table, globally, on the database or on the table.
func (s *Server) holdsOnTable(c *mysql.Conn, priv sql.PrivilegeType, db, table string) bool {
	set, ok := s.sql.ConnPrivileges(c)
	if !ok {
		return false
	}
	d := set.Database(db)
	return set.Has(priv) || d.Has(priv) || d.Table(table).Has(priv)
}
