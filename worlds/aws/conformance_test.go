package awsworld_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/worldtest"
)

const conformanceRetention = 2 * time.Second

func TestConformance(t *testing.T) {
	var envs sync.Map // *awsworld.World -> *env
	worldtest.Run(t, func(t *testing.T) worlds.World {
		e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = conformanceRetention })
		envs.Store(e.w, e)
		return e.w
	}, worldtest.WithRetention(conformanceRetention), worldtest.WithDriver(func(ctx context.Context, w worlds.World, r worlds.Runner) error {
		v, ok := envs.Load(w)
		if !ok {
			return errors.New("driver: unknown World")
		}
		return v.(*env).drive(ctx, r)
	}))
}

// drive runs the World's deliveries with World.Serve, in-process, and the due
// schedules of the Scheduler fake, until ctx ends.
func (e *env) drive(ctx context.Context, r worlds.Runner) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- e.w.Serve(ctx, r) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-served:
			return err
		case <-tick.C:
			if err := e.sched.RunDue(ctx); err != nil && ctx.Err() == nil {
				cancel()
				<-served
				return err
			}
		}
	}
}
