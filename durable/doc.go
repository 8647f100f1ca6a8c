// Package durable adapts a Go function to AWS Lambda durable execution through
// the service's own wire contract: the invocation payload (execution ARN,
// checkpoint token, initial operation history) and the two APIs
// CheckpointDurableExecution and GetDurableExecutionState of
// aws-sdk-go-v2/service/lambda. It implements the replay protocol itself: steps,
// waits, callbacks, chained invokes, child contexts, Parallel, Map,
// WaitForCondition and the combinators All, AllSettled, Any and Race get the
// operation IDs the official SDKs derive, completed
// operations are replayed from history without running their bodies, every
// state change is checkpointed with the current token and the token returned
// replaces it, and a pending wait, callback, invoke or retry ends the invocation
// with status PENDING so the service reinvokes later.
//
// It lives in its own module so cairn's core never depends on the Lambda SDK.
// AWS's own experimental Go durable SDK is not used because the module proxy does
// not serve it. The tests run against cairn's fake (package lambdafake) and
// against AWS's local checkpoint server (package durabletest); README.md maps the
// Language SDK Specification's requirements to them and says what needs an account.
package durable
