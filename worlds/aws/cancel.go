package awsworld

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

var _ worlds.DeliveryCanceller = (*World)(nil)

// CancelDelivery implements [worlds.DeliveryCanceller]: it deletes the QUEUE#<id>
// record unless a receiver holds an unexpired lease on it (or a Queue call
// rewrote it meanwhile), and then the delivery's Scheduler schedule, if it has
// one. A delivery already sent to SQS with a delay keeps its message, which
// finds no record when it arrives and is acknowledged without running. An
// unknown id, or one already delivered, is not an error.
func (w *World) CancelDelivery(ctx context.Context, id string) error {
	if id == "" {
		return &worlds.ArgumentError{Field: "id", Value: id, Reason: "required"}
	}
	if len(id) > maxIDLength {
		return &worlds.ArgumentError{Field: "id", Value: id[:64] + "...", Reason: fmt.Sprintf("longer than %d bytes", maxIDLength)}
	}
	item, err := w.getItem(ctx, queuePK(id), metaSK)
	if err != nil || item == nil {
		return err
	}
	rec, err := decodeRecord(id, item)
	if err != nil {
		return err
	}
	// The conditional delete keeps a record being executed or re-armed since it
	// was read; only a deleted record loses its schedule. Leases are wall-clock
	// times (the handler's), so the lease check reads the wall clock, not w.now.
	return w.dropRecord(ctx, rec, time.Now())
}
