package apitypes

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The network field of an exec policy is false (a command has only its
// own loopback), true (a command that asks shares the host's network) or
// {"allow": [...]} (a command that asks reaches the host names,
// wildcards and CIDRs listed, through the daemon's egress proxy, and
// nothing else). ExecPolicy holds the first two as Network and the third
// as NetworkAllow (non-nil, possibly empty).

// NetworkAllowlist is the object form of an exec policy's network.
type NetworkAllowlist struct {
	Allow []string `json:"allow"`
}

// MarshalJSON writes network as false, true or {"allow": [...]}.
func (e ExecPolicy) MarshalJSON() ([]byte, error) {
	type plain ExecPolicy
	var network any = e.Network
	if e.NetworkAllow != nil {
		network = NetworkAllowlist{Allow: e.NetworkAllow}
	}
	return json.Marshal(struct {
		plain
		Network any `json:"network"`
	}{plain(e), network})
}

// UnmarshalJSON reads network as false, true or {"allow": [...]}; a
// field the policy does not have is an error, as everywhere in the API.
func (e *ExecPolicy) UnmarshalJSON(b []byte) error {
	type plain ExecPolicy
	v := struct {
		*plain
		Network json.RawMessage `json:"network"`
	}{plain: (*plain)(e)}
	if err := strictJSON(b, &v); err != nil {
		return err
	}
	e.Network, e.NetworkAllow = false, nil
	return readNetwork(v.Network, &e.Network, &e.NetworkAllow)
}

// readNetwork reads the network field's JSON (absent or null: false).
func readNetwork(raw json.RawMessage, host *bool, allow *[]string) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null" || string(raw) == "false":
		return nil
	case string(raw) == "true":
		*host = true
		return nil
	case raw[0] == '{':
		var l struct {
			Allow *[]string `json:"allow"`
		}
		if err := strictJSON(raw, &l); err != nil {
			return errors.New(`network: want false, true or {"allow": ["host", "*.domain", "10.0.0.0/8"]}: ` + err.Error())
		}
		if l.Allow == nil {
			return errors.New(`network: {"allow": [...]} needs its allow list (an empty list: nothing is reachable)`)
		}
		*allow = append([]string{}, *l.Allow...)
		return nil
	}
	return errors.New(`network: want false, true or {"allow": ["host", "*.domain", "10.0.0.0/8"]}`)
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
