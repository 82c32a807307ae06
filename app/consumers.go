package app

import (
	"context"

	"seckill/service/async"
)

// asyncConsumers are the async stream consumers of this process. They write
// the admitted orders to the database. Stop lets them finish the batch in
// hand, until its context ends.
type asyncConsumers struct {
	group   *async.ConsumerGroup
	started *async.Consumers
}

// Name is "consumers".
func (*asyncConsumers) Name() string { return "consumers" }

// Start creates the consumer group if needed and starts the consumers.
func (c *asyncConsumers) Start(ctx context.Context) error {
	if c.started != nil {
		return errRunning
	}
	r, err := c.group.StartConsumers(ctx)
	if err != nil {
		return err
	}
	c.started = r
	return nil
}

// Stop asks the consumers to finish their batch and waits until ctx ends.
func (c *asyncConsumers) Stop(ctx context.Context) error {
	if c.started == nil {
		return nil
	}
	err := c.started.Stop(ctx)
	c.started = nil
	return err
}

// running reports whether the consumers run.
func (c *asyncConsumers) running() bool { return c.started != nil }
