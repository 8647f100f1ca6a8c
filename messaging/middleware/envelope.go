package middleware

import (
	"bytes"
	"encoding/json"
	"time"
)

// SNSEnvelope is the JSON notification SNS writes into an SQS body when the
// subscription does not use raw message delivery.
type SNSEnvelope struct {
	Type              string                          `json:"Type"`
	MessageID         string                          `json:"MessageId"`
	TopicArn          string                          `json:"TopicArn"`
	Subject           string                          `json:"Subject"`
	Message           string                          `json:"Message"`
	Timestamp         time.Time                       `json:"Timestamp"`
	MessageAttributes map[string]SNSEnvelopeAttribute `json:"MessageAttributes"`
}

// SNSEnvelopeAttribute is one entry of SNSEnvelope.MessageAttributes.
type SNSEnvelopeAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// ParseSNSEnvelope decodes body as an SNS notification. It reports false for
// anything else (a raw-delivery body, JSON that is not a notification), so
// callers can fall back to the body itself.
func ParseSNSEnvelope(body []byte) (SNSEnvelope, bool) {
	var env SNSEnvelope
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !bytes.Contains(b, []byte(`"Notification"`)) {
		return env, false
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Type != "Notification" || env.TopicArn == "" {
		return SNSEnvelope{}, false
	}
	return env, true
}
