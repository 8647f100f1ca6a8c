package awsworld_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Escalate waits an hour for a hook payload, then sleeps two hours whatever
// came first.
type Escalate struct{}

func (Escalate) Run(ctx workflow.Context, token string) (int, error) {
	hook, err := workflow.CreateHook[int](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return 0, err
	}
	i, err := workflow.Select(ctx, hook, workflow.NewTimer(ctx, time.Hour))
	if err != nil {
		return 0, err
	}
	v := -1
	if i == 0 {
		if v, err = hook.Receive(ctx); err != nil {
			return 0, err
		}
	}
	return v, workflow.Sleep(ctx, 2*time.Hour)
}

// A timer that loses a Select has its Scheduler schedule deleted while the run
// goes on: only the later sleep's schedule is left.
func TestSelectLoserScheduleDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.FlushCache)
	ctx := context.Background()
	handler := awsworld.Queue(e.w, client.Runner(workflow.Use(Escalate{})))
	queues := map[string]string{e.arn: e.url}
	token := "escalate-" + e.url[strings.LastIndex(e.url, "/")+1:]
	run, err := workflow.Start(ctx, client, Escalate{}, token)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 1 })
	timer := e.sched.Schedules()[0].Name
	if !strings.Contains(timer, "wait_2") {
		t.Fatalf("schedule %s, want the timer's wake-up", timer)
	}
	if _, err := workflow.ResumeHook(ctx, client, token, 7); err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, func() bool {
		s := e.sched.Schedules()
		return len(s) == 1 && s[0].Name != timer
	})
	if s := e.sched.Schedules(); !strings.Contains(s[0].Name, "wait_3") {
		t.Fatalf("schedules %+v, want only the sleep's", s)
	}
	if r, err := e.w.GetRun(ctx, run.ID()); err != nil || r.Status != worlds.RunRunning {
		t.Fatalf("run = %+v, %v; want it asleep", r, err)
	}
	e.advance(t, 3*time.Hour)
	drain(t, e, handler, queues, runDone(t, e.w, run.ID()))
	if out, err := run.Result(ctx); err != nil || out != 7 {
		t.Fatalf("Result = %d, %v", out, err)
	}
	if d := e.sched.Delivered(); len(d) != 1 || !strings.Contains(d[0].Name, "wait_3") {
		t.Fatalf("delivered schedules %+v, want only the sleep's", d)
	}
}
