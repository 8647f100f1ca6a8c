// Package reliability is cairn's fault, crash and contention test tier. It holds
// no library code: its tests drive the workflow runtime on real Worlds through
// the fault-injecting wrapper of internal/chaos and assert that no run is lost, no
// completed step's side effect is applied twice and no event is lost or
// reordered. Every test is bounded in iterations and time and prints the random
// seed it used, so a failure is reproduced with CHAOS_SEED=<seed>.
package reliability
