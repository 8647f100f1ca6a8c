package metrics

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func TestSweepEMFLine(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_123)
	var buf bytes.Buffer
	m := Sweep{Namespace: "cairn", Deployment: "demo", Now: func() time.Time { return at }}
	if err := m.Write(&buf, awsworld.SweepResult{Overdue: 5, Resent: []string{"a", "b"}, Waiting: 3}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("want one line, got %q", buf.String())
	}
	var got struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Deployment                                             string
		OverdueDeliveries, ResentDeliveries, WaitingDeliveries int
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	cw := got.AWS.CloudWatchMetrics
	if got.AWS.Timestamp != at.UnixMilli() || len(cw) != 1 || cw[0].Namespace != "cairn" || len(cw[0].Dimensions) != 1 || cw[0].Dimensions[0][0] != "Deployment" {
		t.Fatalf("EMF envelope %+v", got.AWS)
	}
	for _, mt := range cw[0].Metrics {
		if mt.Unit != "Count" {
			t.Errorf("metric %s unit %q", mt.Name, mt.Unit)
		}
	}
	if len(cw[0].Metrics) != 3 || got.Deployment != "demo" || got.OverdueDeliveries != 5 || got.ResentDeliveries != 2 || got.WaitingDeliveries != 3 {
		t.Fatalf("values %+v", got)
	}
	for _, bad := range []Sweep{{Deployment: "demo", Now: time.Now}, {Namespace: "cairn", Now: time.Now}} {
		if err := bad.Write(&bytes.Buffer{}, awsworld.SweepResult{}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
