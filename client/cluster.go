package client

import (
	"context"

	"github.com/sessiond/sessiond/apitypes"
)

// Cluster returns the nodes of the cluster as the daemon sees them (admin).
func (c *Client) Cluster(ctx context.Context) (apitypes.ClusterStatus, error) {
	var st apitypes.ClusterStatus
	err := c.do(ctx, "GET", "/v1/cluster", nil, nil, &st)
	return st, err
}
