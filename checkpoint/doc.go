// Package checkpoint is cairn's versioned JSON contract for values a durable run
// persists (step results, hook payloads, workflow inputs): an envelope
// {"v":1,"type":"...","data":...,"sum":"sha256:..."} written with encoding/json and
// read back strictly, so a value written by one release of an application is
// either read correctly by the next one or rejected with a typed error, never
// silently misread.
//
// encoding/json/v2 is not used: in Go 1.26 it still builds only with
// GOEXPERIMENT=jsonv2, which cairn does not ask its users to set. The decoder
// therefore runs a strict pre-scan of its own (exact grammar, valid UTF-8 with no
// lone surrogate escapes, no duplicate object members, bounded nesting) and then
// decodes with encoding/json using Decoder.UseNumber, so numbers stored in
// interface values stay exact json.Number text. The outcomes for each hazard are
// listed on [Codec.Unmarshal] and in docs/durable-execution.md; every one is tested.
package checkpoint
