package client

import (
	"bufio"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/sessiond/sessiond/apitypes"
)

// StartService starts a service on a session (SPEC §15).
func (c *Client) StartService(ctx context.Context, id string, in apitypes.ServiceRequest) (apitypes.Service, error) {
	var out apitypes.Service
	err := c.do(ctx, "POST", sessionPath(id, "services"), nil, in, &out)
	return out, err
}

// Services lists a session's services.
func (c *Client) Services(ctx context.Context, id string) (apitypes.ServiceList, error) {
	var out apitypes.ServiceList
	err := c.do(ctx, "GET", sessionPath(id, "services"), nil, nil, &out)
	return out, err
}

// StopService stops a session's service.
func (c *Client) StopService(ctx context.Context, id, name string) (apitypes.Service, error) {
	var out apitypes.Service
	err := c.do(ctx, "DELETE", sessionPath(id, "services", url.PathEscape(name)), nil, nil, &out)
	return out, err
}

// ServiceLogs passes a service's output to line: the last tail lines,
// then, with follow, each new one until the service ends or ctx does.
func (c *Client) ServiceLogs(ctx context.Context, id, name string, tail int, follow bool, line func(string)) error {
	q := url.Values{"tail": {strconv.Itoa(tail)}, "follow": {strconv.FormatBool(follow)}}
	req, err := c.newRequest(ctx, "GET", sessionPath(id, "services", url.PathEscape(name), "logs"), q, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var l apitypes.ServiceLogLine
		if json.Unmarshal([]byte(data), &l) != nil {
			continue
		}
		if data == "{}" {
			return nil // end
		}
		line(l.Line)
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// PortLink makes a signed link to a port of a session.
func (c *Client) PortLink(ctx context.Context, id string, port int, ttlSeconds float64) (apitypes.PortLink, error) {
	var out apitypes.PortLink
	err := c.do(ctx, "POST", sessionPath(id, "ports", strconv.Itoa(port), "link"), nil, apitypes.PortLinkRequest{TTLSeconds: ttlSeconds}, &out)
	return out, err
}
