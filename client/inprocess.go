package client

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// NewInProcess returns a client whose requests are served by h in this
// process, with no network in between: the same routes, auth, path rules,
// policies and error mapping as over HTTP, because h is the API's own
// handler. `sessiond mcp` uses it to run the engine in-process.
func NewInProcess(h http.Handler, token string) *Client {
	c := New("http://in-process", token)
	c.http = &http.Client{Transport: handlerTransport{h}}
	return c
}

// handlerTransport is an http.RoundTripper that calls a handler. The
// response body is a pipe the handler writes into, so streaming answers
// (Server-Sent Events) arrive as they are written.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil {
		req.Body = http.NoBody
	}
	if req.RequestURI == "" {
		req.RequestURI = req.URL.RequestURI()
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				w.start(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("handler panic: %v", p))
				return
			}
			w.start(http.StatusOK)
			pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	resp := &http.Response{
		Status: strconv.Itoa(w.status) + " " + http.StatusText(w.status), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, Request: req, ContentLength: -1,
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		pr.Close()
		resp.Body = http.NoBody
	}
	return resp, nil
}

// pipeResponse is the handler's http.ResponseWriter. The header is taken
// when the status is written; writes block until the client reads them.
type pipeResponse struct {
	header http.Header
	sent   http.Header
	status int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) start(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeResponse) WriteHeader(status int) {
	if status >= 100 && status < 200 {
		return
	}
	w.start(status)
}

func (w *pipeResponse) Write(b []byte) (int, error) {
	w.start(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is a no-op: every write already reaches the reader.
func (w *pipeResponse) Flush() {}
