// Package schedulertest is a fake of the EventBridge Scheduler API for tests of
// the AWS World: an httptest server speaking Scheduler's REST-JSON protocol
// (CreateSchedule, GetSchedule, DeleteSchedule) that really sends each schedule's
// input to its SQS target queue when the schedule is due, by a clock the test
// controls. No emulator of Scheduler exists, so this is what the World's
// integration tests point the SDK client at.
package schedulertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Sender is the part of the SQS client the fake delivers with.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Schedule is a schedule as the fake stores it.
type Schedule struct {
	Name, Group           string
	At                    time.Time
	TargetARN, RoleARN    string
	Input, MessageGroupID string
	DeleteAfter           bool
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server
	sqs Sender
	// URLForARN maps a target queue ARN to its URL.
	urlForARN func(arn string) (string, error)

	now func() time.Time

	mu        sync.Mutex
	schedules map[string]*Schedule // group/name
	delivered []Schedule
}

// New starts the fake. now is its clock, normally the one the World under test
// uses; urlForARN resolves target ARNs to queue URLs for sqs. Close it with
// t.Cleanup(s.Close).
func New(sqsClient Sender, now func() time.Time, urlForARN func(arn string) (string, error)) *Server {
	s := &Server{sqs: sqsClient, urlForARN: urlForARN, now: now, schedules: map[string]*Schedule{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the endpoint to give the Scheduler client (BaseEndpoint).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client returns a Scheduler SDK client pointed at the fake.
func (s *Server) Client(cfg aws.Config) *scheduler.Client {
	return scheduler.NewFromConfig(cfg, func(o *scheduler.Options) { o.BaseEndpoint = aws.String(s.srv.URL) })
}

// Schedules returns the pending schedules.
func (s *Server) Schedules() []Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Schedule, 0, len(s.schedules))
	for _, sc := range s.schedules {
		out = append(out, *sc)
	}
	return out
}

// Delivered returns the schedules that have run, in order.
func (s *Server) Delivered() []Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Schedule(nil), s.delivered...)
}

// RunDue delivers every schedule due by the clock, in due order, sending its input
// to the target queue, as Scheduler would. It returns the first send error.
func (s *Server) RunDue(ctx context.Context) error {
	now := s.now()
	s.mu.Lock()
	var due []*Schedule
	for k, sc := range s.schedules {
		if !sc.At.After(now) {
			due = append(due, sc)
			if sc.DeleteAfter {
				delete(s.schedules, k)
			}
		}
	}
	s.mu.Unlock()
	for i := 1; i < len(due); i++ { // insertion sort by due time; few schedules
		for j := i; j > 0 && due[j].At.Before(due[j-1].At); j-- {
			due[j], due[j-1] = due[j-1], due[j]
		}
	}
	for _, sc := range due {
		url, err := s.urlForARN(sc.TargetARN)
		if err != nil {
			return err
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(sc.Input)}
		if sc.MessageGroupID != "" {
			in.MessageGroupId = aws.String(sc.MessageGroupID)
		}
		if _, err := s.sqs.SendMessage(ctx, in); err != nil {
			return fmt.Errorf("schedulertest: deliver %s: %w", sc.Name, err)
		}
		s.mu.Lock()
		s.delivered = append(s.delivered, *sc)
		s.mu.Unlock()
	}
	return nil
}

var atExpr = regexp.MustCompile(`^at\((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\)$`)

type createBody struct {
	GroupName                  string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	ActionAfterCompletion      string
	FlexibleTimeWindow         struct{ Mode string }
	Target                     struct {
		Arn, RoleArn, Input string
		SqsParameters       *struct{ MessageGroupId string }
	}
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/schedules/")
	if !ok || name == "" {
		writeErr(w, http.StatusNotFound, "ResourceNotFoundException", "unknown path "+r.URL.Path)
		return
	}
	group := r.URL.Query().Get("groupName")
	switch r.Method {
	case http.MethodPost:
		var b createBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			writeErr(w, http.StatusBadRequest, "ValidationException", err.Error())
			return
		}
		group = b.GroupName
		if group == "" {
			group = "default"
		}
		m := atExpr.FindStringSubmatch(b.ScheduleExpression)
		if m == nil || (b.ScheduleExpressionTimezone != "" && b.ScheduleExpressionTimezone != "UTC") {
			writeErr(w, http.StatusBadRequest, "ValidationException", "the fake supports one-time at() schedules in UTC, got "+b.ScheduleExpression)
			return
		}
		at, _ := time.Parse("2006-01-02T15:04:05", m[1])
		if b.Target.Arn == "" || b.Target.RoleArn == "" || b.FlexibleTimeWindow.Mode == "" {
			writeErr(w, http.StatusBadRequest, "ValidationException", "Target.Arn, Target.RoleArn and FlexibleTimeWindow are required")
			return
		}
		sc := &Schedule{Name: name, Group: group, At: at, TargetARN: b.Target.Arn, RoleARN: b.Target.RoleArn, Input: b.Target.Input, DeleteAfter: b.ActionAfterCompletion == "DELETE"}
		if b.Target.SqsParameters != nil {
			sc.MessageGroupID = b.Target.SqsParameters.MessageGroupId
		}
		s.mu.Lock()
		_, exists := s.schedules[group+"/"+name]
		if !exists {
			s.schedules[group+"/"+name] = sc
		}
		s.mu.Unlock()
		if exists {
			writeErr(w, http.StatusConflict, "ConflictException", "schedule "+name+" already exists")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"ScheduleArn": "arn:aws:scheduler:us-east-1:000000000000:schedule/" + group + "/" + name})
	case http.MethodGet, http.MethodDelete:
		if group == "" {
			group = "default"
		}
		s.mu.Lock()
		sc, exists := s.schedules[group+"/"+name]
		if exists && r.Method == http.MethodDelete {
			delete(s.schedules, group+"/"+name)
		}
		s.mu.Unlock()
		if !exists {
			writeErr(w, http.StatusNotFound, "ResourceNotFoundException", "schedule "+name+" does not exist")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodDelete {
			_, _ = w.Write([]byte("{}"))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"Name": sc.Name, "GroupName": sc.Group, "ScheduleExpression": "at(" + sc.At.Format("2006-01-02T15:04:05") + ")",
			"ScheduleExpressionTimezone": "UTC", "State": "ENABLED",
			"FlexibleTimeWindow": map[string]string{"Mode": "OFF"},
			"Target":             map[string]any{"Arn": sc.TargetARN, "RoleArn": sc.RoleARN, "Input": sc.Input},
		})
	default:
		writeErr(w, http.StatusMethodNotAllowed, "ValidationException", "method "+r.Method)
	}
}
