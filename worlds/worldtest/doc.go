// Package worldtest is the conformance suite every [worlds.World] must pass. A
// World proves itself with one line in its tests:
//
//	func TestWorld(t *testing.T) {
//		worldtest.Run(t, func(t *testing.T) worlds.World { return newTestWorld(t) })
//	}
//
// The suite covers every event type and invalid transition, optimistic concurrency,
// queue idempotency, redelivery and early arrival, waits and cancelled waits,
// hooks, streams, cancellation, retention, pagination and attribute filters
// ([worlds.RunFilter].Attributes). Behaviour a World
// declares it lacks in [worlds.Capabilities] is skipped, and so is the
// withdrawal of queued deliveries when the World is not a
// [worlds.DeliveryCanceller], and eager starts when it is not a
// [worlds.EagerStarter]; tests that consume deliveries need a
// [worlds.Server] or a [WithDriver] function.
package worldtest
