// Package metrics publishes the sweeper's results as CloudWatch metrics in the
// Embedded Metric Format: one JSON log line per sweep, which CloudWatch Logs
// turns into metrics without an API call (and so without PutMetricData
// permissions or latency).
package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Sweep names the metrics a sweep publishes, in Namespace with the dimension
// Deployment: OverdueDeliveries (records overdue), ResentDeliveries (sent again
// because their message was gone) and WaitingDeliveries (overdue but held by a
// receiver or waiting for their retry).
type Sweep struct {
	Namespace  string
	Deployment string
	// Now stamps each line; Lambda code passes time.Now.
	Now func() time.Time
}

// Write writes res to w as one EMF line. An empty Namespace or Deployment is a
// configuration error: the alarm would watch a metric nobody publishes.
func (m Sweep) Write(w io.Writer, res awsworld.SweepResult) error {
	if m.Namespace == "" || m.Deployment == "" {
		return fmt.Errorf("metrics: Namespace %q and Deployment %q are both required", m.Namespace, m.Deployment)
	}
	metric := func(name string) map[string]string { return map[string]string{"Name": name, "Unit": "Count"} }
	line := map[string]any{
		"_aws": map[string]any{
			"Timestamp": m.Now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  m.Namespace,
				"Dimensions": [][]string{{"Deployment"}},
				"Metrics":    []any{metric("OverdueDeliveries"), metric("ResentDeliveries"), metric("WaitingDeliveries")},
			}},
		},
		"Deployment":        m.Deployment,
		"OverdueDeliveries": res.Overdue,
		"ResentDeliveries":  len(res.Resent),
		"WaitingDeliveries": res.Waiting,
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
