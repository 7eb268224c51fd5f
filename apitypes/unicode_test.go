package apitypes

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckStrings covers the strings encoding/json would turn into U+FFFD
// without a word, and the valid ones next to them: each case runs on the
// whole buffer and through CheckedReader one byte at a time, so the
// scanner's state across reads is tested too.
func TestCheckStrings(t *testing.T) {
	type want struct {
		where string // "" for valid
		key   bool
		path  bool
	}
	tests := []struct {
		name string
		body string
		into any
		want want
	}{
		{"plain", `{"edits":[{"op":"write","path":"a/b.txt","content":"x"}]}`, EditsRequest{}, want{}},
		{"valid pair", `{"edits":[{"op":"write","path":"\ud83d\ude00.txt"}]}`, EditsRequest{}, want{}},
		{"valid multibyte", "{\"edits\":[{\"op\":\"write\",\"path\":\"h\u00e9\u4e16\U0001F600\"}]}", EditsRequest{}, want{}},
		{"escaped backslash before u", `{"edits":[{"op":"write","path":"a\\ud800"}]}`, EditsRequest{}, want{}},
		{"NUL is Unicode", `{"edits":[{"op":"write","path":"a\u0000"}]}`, EditsRequest{}, want{}},
		{"lone high surrogate in path", `{"edits":[{"op":"write","path":"\ud800"}]}`, EditsRequest{}, want{"/edits/0/path", false, true}},
		{"lone low surrogate in to", `{"edits":[{"op":"move","path":"a","to":"b\udc00"}]}`, EditsRequest{}, want{"/edits/0/to", false, true}},
		{"high then high", `{"edits":[{"op":"delete","glob":"\ud800\ud800\udc00"}]}`, EditsRequest{}, want{"/edits/0/glob", false, true}},
		{"high then plain", `{"edits":[{"op":"write","path":"\uD800x"}]}`, EditsRequest{}, want{"/edits/0/path", false, true}},
		{"high then other escape", `{"edits":[{"op":"write","path":"\ud800\n"}]}`, EditsRequest{}, want{"/edits/0/path", false, true}},
		{"invalid byte", "{\"edits\":[{\"op\":\"write\",\"path\":\"a\xffb\"}]}", EditsRequest{}, want{"/edits/0/path", false, true}},
		{"truncated sequence", "{\"edits\":[{\"op\":\"write\",\"path\":\"a\xe4\xb8\"}]}", EditsRequest{}, want{"/edits/0/path", false, true}},
		{"overlong", "{\"edits\":[{\"op\":\"write\",\"path\":\"\xc0\xaf\"}]}", EditsRequest{}, want{"/edits/0/path", false, true}},
		{"encoded surrogate", "{\"edits\":[{\"op\":\"write\",\"path\":\"\xed\xa0\x80\"}]}", EditsRequest{}, want{"/edits/0/path", false, true}},
		{"second edit", `{"edits":[{"op":"write","path":"ok"},{"op":"write","path":"\udfff"}]}`, EditsRequest{}, want{"/edits/1/path", false, true}},
		{"content is not a path", `{"edits":[{"op":"write","path":"ok","content":"\ud800"}]}`, EditsRequest{}, want{"/edits/0/content", false, false}},
		{"comment path", `{"verdict":"comment","comments":[{"path":"\ud800","line":1,"body":"x"}]}`, ReviewRequest{}, want{"/comments/0/path", false, true}},
		{"comment body", `{"verdict":"comment","comments":[{"path":"a","line":1,"body":"\ud800"}]}`, ReviewRequest{}, want{"/comments/0/body", false, false}},
		{"selected file", `{"select":{"files":["a","\ud800"]}}`, AcceptRequest{}, want{"/select/files/1", false, true}},
		{"hunks key", `{"select":{"hunks":{"\ud800":[0]}}}`, AcceptRequest{}, want{"/select/hunks/\ufffd", true, true}},
		{"unknown member name", `{"\ud800":1}`, AcceptRequest{}, want{"/\ufffd", true, false}},
		{"search prefix", `{"pattern":"x","prefix":"\ud800"}`, SearchRequest{}, want{"/prefix", false, true}},
		{"search pattern", `{"pattern":"\ud800"}`, SearchRequest{}, want{"/pattern", false, false}},
		{"policy glob", `{"repo":"r","policy":{"write":["src/**","\ud800"]}}`, CreateSessionRequest{}, want{"/policy/write/1", false, true}},
		{"exec cwd", `{"argv":["x"],"cwd":"\ud800"}`, ExecRequest{}, want{"/cwd", false, true}},
		{"exec env", `{"argv":["x"],"env":{"A":"\ud800"}}`, ExecRequest{}, want{"/env/A", false, false}},
		{"case-folded member", `{"Pattern":"x","GLOB":"\ud800"}`, SearchRequest{}, want{"/GLOB", false, true}},
		{"top-level string", `"\ud800"`, "", want{"/", false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(t *testing.T, bad *BadStringError) {
				if tt.want.where == "" {
					assert.Nil(t, bad)
					return
				}
				require.NotNil(t, bad)
				bad.Classify(tt.into)
				assert.Equal(t, tt.want.where, bad.Where())
				assert.Equal(t, tt.want.key, bad.Key)
				assert.Equal(t, tt.want.path, bad.Path)
				assert.Contains(t, bad.Value, "\ufffd")
			}
			t.Run("buffer", func(t *testing.T) { check(t, CheckStrings([]byte(tt.body))) })
			t.Run("stream", func(t *testing.T) {
				_, err := io.ReadAll(NewCheckedReader(iotest.OneByteReader(strings.NewReader(tt.body))))
				var bad *BadStringError
				if !errors.As(err, &bad) {
					require.NoError(t, err)
				}
				check(t, bad)
			})
			if tt.want.where != "" {
				// What the check exists for: the standard decoder takes the
				// same text without an error.
				var v any
				assert.NoError(t, json.Unmarshal([]byte(tt.body), &v))
			}
		})
	}
}

// TestCheckedReaderStopsTheDecoder: a decoder reading through the check
// returns its error instead of a value with U+FFFD in it.
func TestCheckedReaderStopsTheDecoder(t *testing.T) {
	var req EditsRequest
	err := json.NewDecoder(NewCheckedReader(strings.NewReader(`{"edits":[{"op":"write","path":"\ud800"}]}`))).Decode(&req)
	var bad *BadStringError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, "/edits/0/path", bad.Where())
}

// BenchmarkDecodeEdits decodes a batch of edits with the given content
// size, plainly and through CheckedReader, side by side: the check's cost
// on the API's largest bodies.
func BenchmarkDecodeEdits(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 16 << 20} {
		content := strings.Repeat("package main // ascii text\n", size/27+1)[:size]
		body, err := json.Marshal(EditsRequest{Edits: []Edit{{Op: OpWrite, Path: "src/main.go", Content: content}}})
		require.NoError(b, err)
		for _, checked := range []bool{false, true} {
			name := "plain"
			if checked {
				name = "checked"
			}
			b.Run(name+"/bytes="+strconv.Itoa(size), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					var r io.Reader = strings.NewReader(string(body))
					if checked {
						r = NewCheckedReader(r)
					}
					var req EditsRequest
					if err := json.NewDecoder(r).Decode(&req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
