package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/sessiond/sessiond/apitypes"
)

// Exec runs a command on a session's view. With output set, the output
// streams (Server-Sent Events) and output is called with each chunk as it
// comes ("stdout" or "stderr"); the result is the same either way.
func (c *Client) Exec(ctx context.Context, id string, in apitypes.ExecRequest, output func(stream string, data []byte)) (apitypes.ExecResponse, error) {
	var out apitypes.ExecResponse
	if output == nil {
		err := c.do(ctx, "POST", sessionPath(id, "exec"), nil, in, &out)
		return out, err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	req, err := c.newRequest(ctx, "POST", sessionPath(id, "exec"), nil, bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.send(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		err := json.NewDecoder(resp.Body).Decode(&out)
		return out, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var name string
	var payload []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			switch name {
			case "stdout", "stderr":
				var o apitypes.ExecOutput
				if json.Unmarshal(payload, &o) == nil {
					output(name, []byte(o.Data))
				}
			case "result":
				err := json.Unmarshal(payload, &out)
				return out, err
			case "error":
				var body struct {
					Error map[string]any `json:"error"`
				}
				e := &Error{Status: 500, Code: "internal"}
				if json.Unmarshal(payload, &body) == nil && body.Error != nil {
					e.Code, _ = body.Error["code"].(string)
					e.Message, _ = body.Error["message"].(string)
				}
				return out, e
			}
			name, payload = "", payload[:0]
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			payload = append(payload, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, errors.New("exec: the stream ended without a result")
}
