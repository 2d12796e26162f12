package app

import (
	"context"

	"github.com/chatd/chatd/app/files"
	"github.com/chatd/chatd/app/hooks"
	"github.com/chatd/chatd/app/schedules"
	"github.com/chatd/chatd/app/webhooks"
)

// automation is what makes chats work without a person at the keyboard:
// the schedules' runner and the webhooks' deliverer, one of each per
// replica (both are safe to run on every replica).
type automation struct {
	schedules *schedules.Service
	runner    *schedules.Runner
	webhooks  *webhooks.Service
	deliverer *webhooks.Deliverer
}

// initAutomation builds the schedules and webhooks parts over the app's
// store, machine and lifecycle hooks (scheduled prompts are evaluated like
// a person's).
func (a *App) initAutomation(h *hooks.Dispatcher) {
	fileCap := a.cfg.Files.MaxPerChat
	if fileCap == 0 {
		fileCap = files.DefaultMaxPerChat
	}
	au := &a.auto
	au.schedules = schedules.New(a.store, a.clock, a.cfg.Schedules)
	au.runner = schedules.NewRunner(schedules.RunnerConfig{Machine: a.machine, Store: a.store, Hooks: h, Clock: a.clock,
		Log: a.log, FileCap: fileCap})
	au.schedules.OnChange(au.runner.Wake)
	au.webhooks = webhooks.New(a.store, a.clock, a.cfg.Webhooks)
	au.deliverer = webhooks.NewDeliverer(webhooks.DelivererConfig{Store: a.store, Clock: a.clock, Log: a.log,
		AllowPrivate: a.cfg.Webhooks.AllowPrivate})
}

// wakeDeliverer is the machine's OnOutbox: deliveries a bundle wrote go
// out at once from this replica.
func (a *App) wakeDeliverer() {
	if a.auto.deliverer != nil {
		a.auto.deliverer.Wake()
	}
}

func (a *App) startAutomation(ctx context.Context) error {
	if err := a.auto.runner.Start(ctx); err != nil {
		return err
	}
	return a.auto.deliverer.Start(ctx)
}

func (a *App) stopAutomation() {
	if a.auto.runner != nil {
		a.auto.runner.Stop()
		a.auto.deliverer.Stop()
	}
}
