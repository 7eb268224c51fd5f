package api

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sessiond/sessiond/apitypes"
	"github.com/sessiond/sessiond/cluster"
)

// The cluster's routes and metrics (SPEC section 16).

func (s *Server) clusterStatus(w http.ResponseWriter, r *http.Request) error {
	st, err := s.cluster.Status(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toClusterStatus(st))
	return nil
}

func toClusterStatus(st cluster.Status) apitypes.ClusterStatus {
	out := apitypes.ClusterStatus{Enabled: st.Enabled, Self: st.Self, LeaseSeconds: st.Lease.Seconds(), Nodes: []apitypes.ClusterNode{}}
	for _, n := range st.Nodes {
		cn := apitypes.ClusterNode{ID: n.ID, AdvertiseURL: n.AdvertiseURL, Version: n.Version, StartedAt: n.StartedAt,
			HeartbeatAt: n.HeartbeatAt, HeartbeatAgeSeconds: n.HeartbeatAge.Seconds(), Health: health(n),
			Sessions: n.Sessions, RunningCommands: n.RunningCommands, Draining: n.Draining}
		if !n.StoppedAt.IsZero() {
			t := n.StoppedAt
			cn.StoppedAt = &t
		}
		out.Nodes = append(out.Nodes, cn)
	}
	return out
}

func health(n cluster.Node) string {
	switch {
	case !n.StoppedAt.IsZero():
		return "stopped"
	case n.Live:
		return "live"
	}
	return "dead"
}

// clusterCollector exports, per node of the cluster, its health and what
// it holds, as the store has them at scrape time.
type clusterCollector struct {
	c                                 *cluster.Cluster
	live, age, sessions, running, err *prometheus.Desc
}

func newClusterCollector(c *cluster.Cluster) *clusterCollector {
	l := []string{"node"}
	return &clusterCollector{c: c,
		live:     prometheus.NewDesc("sessiond_cluster_node_live", "1 when the node's heartbeat is within the lease and it has not stopped, else 0.", l, nil),
		age:      prometheus.NewDesc("sessiond_cluster_node_heartbeat_age_seconds", "Age of the node's last heartbeat, on the database's clock.", l, nil),
		sessions: prometheus.NewDesc("sessiond_cluster_node_sessions", "Sessions the node held in memory at its last heartbeat.", l, nil),
		running:  prometheus.NewDesc("sessiond_cluster_node_running_commands", "Commands running on the node's sessions at its last heartbeat.", l, nil),
		err:      prometheus.NewDesc("sessiond_cluster_status_errors", "1 when the nodes could not be read at this scrape.", nil, nil),
	}
}

func (cc *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cc.live
	ch <- cc.age
	ch <- cc.sessions
	ch <- cc.running
	ch <- cc.err
}

func (cc *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := cc.c.Status(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(cc.err, prometheus.GaugeValue, failed)
	for _, n := range st.Nodes {
		live := 0.0
		if n.Live {
			live = 1
		}
		ch <- prometheus.MustNewConstMetric(cc.live, prometheus.GaugeValue, live, n.ID)
		ch <- prometheus.MustNewConstMetric(cc.age, prometheus.GaugeValue, n.HeartbeatAge.Seconds(), n.ID)
		ch <- prometheus.MustNewConstMetric(cc.sessions, prometheus.GaugeValue, float64(n.Sessions), n.ID)
		ch <- prometheus.MustNewConstMetric(cc.running, prometheus.GaugeValue, float64(n.RunningCommands), n.ID)
	}
}

// Drainer hands this node's sessions to the other nodes
// (internal/clustersession implements it).
type Drainer interface {
	Drain(ctx context.Context, timeout time.Duration) (cluster.DrainReport, error)
}

// drainNode drains the node named in the path: this one (a request for
// another was forwarded to it by route).
func (s *Server) drainNode(w http.ResponseWriter, r *http.Request) error {
	var req apitypes.DrainRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.TimeoutSeconds < 0 || req.TimeoutSeconds > 3600 {
		return badRequest("timeout_seconds %v: want 0 to 3600", req.TimeoutSeconds)
	}
	if s.drainer == nil {
		return newError(http.StatusServiceUnavailable, apitypes.CodeUnavailable, "this daemon is no node of a cluster: there is nothing to drain to")
	}
	timeout := time.Duration(req.TimeoutSeconds * float64(time.Second))
	if timeout == 0 {
		timeout = time.Minute
	}
	rep, err := s.drainer.Drain(r.Context(), timeout)
	if err != nil {
		return err
	}
	out := apitypes.DrainResult{Node: s.cluster.ID(), HandedOff: []string{}, Kept: []string{}, WaitedSecs: rep.Waited.Seconds()}
	for _, id := range rep.HandedOff {
		out.HandedOff = append(out.HandedOff, id.String())
	}
	for _, id := range rep.Kept {
		out.Kept = append(out.Kept, id.String())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
