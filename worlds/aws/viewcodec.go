package awsworld

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Event items, and a run view that holds steps, waits or events, store their
// data compressed, as a binary attribute: DynamoDB bills a write by the KB of
// the item, and their JSON repeats the run ID, the field names and the
// append's timestamp in every step and event. A step's usual run view (the run,
// the finished and the running step, three events: about 1.5 KB of JSON,
// 1.8 KB with its keys and index attributes) compresses to under 250 bytes, so
// its put costs 1 write unit instead of 2; an event pack of a few dozen events
// fits one unit.
//
// The binary data is one format byte followed by the compressed JSON:
//
//	0x01  raw DEFLATE (RFC 1951) with viewDict1 as its preset dictionary
//
// viewDict1 is part of that format and must never change; a better dictionary
// is a new format byte. Run views that hold nothing keep their data as the
// JSON string of the run, and items of other kinds keep theirs as JSON strings.
const viewFormatDeflate1 = 0x01

// viewDict1 is the preset dictionary of format 0x01: a run view as the World
// writes it, with the values taken out. DEFLATE finds matches by distance, so
// the strings that occur most often come last.
const viewDict1 = `"waits":[{"runId":"","waitId":"","status":"waiting","resumeAt":"","createdAt":"","completedAt":""}],` +
	`"error":{"message":"","type":"","details":,"fatal":true,"stack":""},"attributes":{},"cancelReason":"","blocked":` +
	`"heartbeatTimeout":,"heartbeatAt":"","heartbeatDetails":,"retryAt":"",` +
	`"type":"wait_created","resumeAt":"","type":"wait_completed","type":"step_retrying","type":"step_failed",` +
	`"type":"run_completed","type":"run_failed","type":"signal_received","token":"","payload":` +
	`[{"runId":"wrun_","workflowName":"","status":"pending","status":"completed","input":,"output":,` +
	`"createdAt":"","startedAt":"","completedAt":"","updatedAt":"","eventCount":},` +
	`{"steps":[{"seq":,"step":{"runId":"wrun_","stepId":"step_","stepName":"","status":"completed","input":,"output":,"attempt":1,` +
	`"createdAt":"","startedAt":"","completedAt":"","updatedAt":""}},` +
	`{"seq":,"step":{"runId":"wrun_","stepId":"step_","stepName":"","status":"running","input":,"attempt":1,` +
	`"createdAt":"","startedAt":"","updatedAt":""}}],` +
	`"events":[{"runId":"wrun_","seq":,"type":"run_started","createdAt":""},` +
	`{"runId":"wrun_","seq":,"type":"step_completed","correlationId":"step_","createdAt":"","output":},` +
	`{"runId":"wrun_","seq":,"type":"step_created","correlationId":"step_","createdAt":"","stepName":"","input":},` +
	`{"runId":"wrun_","seq":,"type":"step_started","correlationId":"step_","createdAt":"","attempt":1,"deliveryId":"start-wrun_"}]}]`

// dataMax bounds what stored data inflates to. DynamoDB items are at most
// 400 KB; data that inflates past this is not data this World wrote.
const dataMax = 64 << 20

var viewWriters = sync.Pool{New: func() any {
	w, err := flate.NewWriterDict(nil, flate.DefaultCompression, []byte(viewDict1))
	if err != nil { // only for an invalid level
		panic(err)
	}
	return w
}}

// viewReaders holds inflaters for reuse: each one allocates about 40 KB.
var viewReaders sync.Pool

// compressData is the binary data attribute holding data in format 0x01.
func compressData(data string) types.AttributeValue {
	var buf bytes.Buffer
	buf.Grow(len(data)/3 + 16)
	buf.WriteByte(viewFormatDeflate1)
	zw := viewWriters.Get().(*flate.Writer)
	zw.Reset(&buf)
	// Writes to a bytes.Buffer do not fail.
	_, _ = io.WriteString(zw, data)
	_ = zw.Close()
	viewWriters.Put(zw)
	return &types.AttributeValueMemberB{Value: buf.Bytes()}
}

// errViewFormat reports binary data in a format this World does not know:
// written by a newer version, or not by the World at all.
var errViewFormat = errors.New("unknown data format")

// dataJSON is the JSON data of a run view or an event item, stored as a string
// or compressed.
func dataJSON(item map[string]types.AttributeValue) (string, error) {
	v, ok := item[attrData].(*types.AttributeValueMemberB)
	if !ok {
		return getS(item, attrData), nil
	}
	if len(v.Value) == 0 || v.Value[0] != viewFormatDeflate1 {
		format := -1
		if len(v.Value) > 0 {
			format = int(v.Value[0])
		}
		return "", fmt.Errorf("%w %d", errViewFormat, format)
	}
	src := bytes.NewReader(v.Value[1:])
	zr, _ := viewReaders.Get().(io.ReadCloser)
	if zr == nil {
		zr = flate.NewReaderDict(src, []byte(viewDict1))
	} else if err := zr.(flate.Resetter).Reset(src, []byte(viewDict1)); err != nil {
		return "", fmt.Errorf("inflate data: %w", err)
	}
	defer viewReaders.Put(zr)
	b, err := io.ReadAll(io.LimitReader(zr, dataMax+1))
	if err != nil {
		return "", fmt.Errorf("inflate data: %w", err)
	}
	if len(b) > dataMax {
		return "", fmt.Errorf("data inflates past %d bytes", dataMax)
	}
	return string(b), nil
}
