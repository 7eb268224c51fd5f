package repos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessiond/sessiond/egress"
	"github.com/sessiond/sessiond/record"
)

// An exec policy's network is stored as the API spells it: false, true
// or {"allow": [...]} (ExecPolicy.NetworkAllow).

type networkAllowlist struct {
	Allow []string `json:"allow"`
}

// MarshalJSON writes network as false, true or {"allow": [...]}.
func (e ExecPolicy) MarshalJSON() ([]byte, error) {
	type plain ExecPolicy
	var network any = e.Network
	if e.NetworkAllow != nil {
		network = networkAllowlist{Allow: e.NetworkAllow}
	}
	return json.Marshal(struct {
		plain
		Network any `json:"network"`
	}{plain(e), network})
}

// UnmarshalJSON reads network as false, true or {"allow": [...]} (a
// policy stored before allowlists has only the first two).
func (e *ExecPolicy) UnmarshalJSON(b []byte) error {
	type plain ExecPolicy
	v := struct {
		*plain
		Network json.RawMessage `json:"network"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Network, e.NetworkAllow = false, nil
	raw := bytes.TrimSpace(v.Network)
	switch {
	case len(raw) == 0 || string(raw) == "null" || string(raw) == "false":
	case string(raw) == "true":
		e.Network = true
	case raw[0] == '{':
		var l networkAllowlist
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("network: %w", err)
		}
		e.NetworkAllow = append([]string{}, l.Allow...)
	default:
		return errors.New(`network: want false, true or {"allow": [...]}`)
	}
	return nil
}

// checkNetwork refuses an allowlist with an entry that is not a host
// name, wildcard, IP address or CIDR (egress.ParseAllowlist is the
// rule), naming it.
func (e ExecPolicy) checkNetwork() error {
	if e.NetworkAllow == nil {
		return nil
	}
	if e.Network {
		return fmt.Errorf("%w: exec.network: the host's network and an allowlist: give one", record.ErrInvalid)
	}
	if _, err := egress.ParseAllowlist(e.NetworkAllow); err != nil {
		return fmt.Errorf("%w: exec.network.%v", record.ErrInvalid, err)
	}
	return nil
}

// NetworkMode is what network a command gets that asks for one.
type NetworkMode int

// Network modes.
const (
	// NetworkNone: only the command's own loopback; it may not ask for
	// more.
	NetworkNone NetworkMode = iota
	// NetworkHost: the host's network (where the daemon allows it).
	NetworkHost
	// NetworkAllowlist: the allowlist's destinations through the
	// daemon's egress proxy, nothing else.
	NetworkAllowlist
)

// NetworkFor says what network a command of the repository that asks
// for one gets under the policy, with the parsed allowlist for
// NetworkAllowlist. Commands and environment setup alike ask it.
func (e ExecPolicy) NetworkFor() (NetworkMode, *egress.Allowlist, error) {
	switch {
	case e.NetworkAllow != nil:
		a, err := egress.ParseAllowlist(e.NetworkAllow)
		if err != nil {
			return NetworkNone, nil, fmt.Errorf("%w: exec.network.%v", record.ErrInvalid, err)
		}
		return NetworkAllowlist, a, nil
	case e.Network:
		return NetworkHost, nil, nil
	}
	return NetworkNone, nil, nil
}
