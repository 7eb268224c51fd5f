package client

import (
	"context"
	"net/url"

	"github.com/sessiond/sessiond/apitypes"
)

// Cluster returns the nodes of the cluster as the daemon sees them (admin).
func (c *Client) Cluster(ctx context.Context) (apitypes.ClusterStatus, error) {
	var st apitypes.ClusterStatus
	err := c.do(ctx, "GET", "/v1/cluster", nil, nil, &st)
	return st, err
}

// DrainNode hands node's sessions to the other nodes (admin): node may be
// any node of the cluster, the request reaching it through the one asked.
func (c *Client) DrainNode(ctx context.Context, node string, req apitypes.DrainRequest) (apitypes.DrainResult, error) {
	var out apitypes.DrainResult
	err := c.do(ctx, "POST", "/v1/cluster/nodes/"+url.PathEscape(node)+"/drain", nil, req, &out)
	return out, err
}
