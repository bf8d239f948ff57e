package server

import (
	"fmt"
	"strconv"
	"strings"
)

// Galera's wsrep_provider_options ("key=value; ..."), as a member takes
// them: the socket.ssl options (TLS between members, clustertls.go) at
// start, and flow control's gcs.fc_limit and gcs.fc_factor at start and
// at run time (SET GLOBAL wsrep_provider_options). Every other option is
// refused by name, since Lockstep would otherwise ignore it.

// applyProviderOptions reads --wsrep-provider-options.
func (c *ClusterConfig) applyProviderOptions(v string) error {
	return c.providerOptionList("--wsrep-provider-options", v, false)
}

// applyFlowOptions reads SET GLOBAL wsrep_provider_options: only the
// options that can change at run time.
func (c *ClusterConfig) applyFlowOptions(v string) error {
	return c.providerOptionList("wsrep_provider_options", v, true)
}

func (c *ClusterConfig) providerOptionList(what, v string, running bool) error {
	for _, kv := range strings.Split(v, ";") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k, val = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val)
		if !ok {
			return fmt.Errorf("%s: %q is not key=value", what, kv)
		}
		switch k {
		case "gcs.fc_limit":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 1 || n > 1<<31 {
				return fmt.Errorf("%s: gcs.fc_limit=%q: an apply queue length from 1", what, val)
			}
			c.FCLimit = n
			continue
		case "gcs.fc_factor":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 || f > 1 {
				return fmt.Errorf("%s: gcs.fc_factor=%q: a fraction from 0 to 1", what, val)
			}
			c.FCFactor = f
			continue
		}
		if running {
			return fmt.Errorf("%s: %s cannot be changed while the server runs (only gcs.fc_limit and gcs.fc_factor can)", what, k)
		}
		switch k {
		case "socket.ssl_cert":
			c.SSLCert = val
		case "socket.ssl_key":
			c.SSLKey = val
		case "socket.ssl_ca":
			c.SSLCA = val
		case "socket.ssl":
			switch strings.ToLower(val) {
			case "yes", "on", "true", "1":
				c.SSLOff = false
			case "no", "off", "false", "0":
				c.SSLOff = true
			default:
				return fmt.Errorf("%s: socket.ssl=%q: yes or no", what, val)
			}
		default:
			return fmt.Errorf("%s: %s has no meaning in Lockstep (it takes socket.ssl, socket.ssl_cert, socket.ssl_key, socket.ssl_ca, gcs.fc_limit and gcs.fc_factor); remove it", what, k)
		}
	}
	return nil
}

// providerOptions is wsrep_provider_options as Galera shows it: the
// options Lockstep takes, with their values.
func (c ClusterConfig) providerOptions() string {
	ssl := "yes"
	if !c.secured() {
		ssl = "no"
	}
	return fmt.Sprintf("gcs.fc_factor = %g; gcs.fc_limit = %d; socket.ssl = %s; socket.ssl_ca = %s; socket.ssl_cert = %s; socket.ssl_key = %s",
		c.FCFactor, c.FCLimit, ssl, c.SSLCA, c.SSLCert, c.SSLKey)
}
