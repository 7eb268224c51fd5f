package egress_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkRequest: a plain HTTP request on a kept-alive connection,
// directly and through the proxy (admitted by CIDR).
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	_, u := startProxy(b, []string{"127.0.0.0/8"}, nil)
	for _, c := range []struct {
		name   string
		client *http.Client
	}{
		{"direct", &http.Client{Transport: &http.Transport{}}},
		{"proxy", &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := c.client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatal(res.Status)
				}
			}
		})
	}
}
