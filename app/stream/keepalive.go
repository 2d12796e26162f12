package stream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chatd/chatd/app/clock"
)

// keepalive pings a WebSocket peer every interval on its clock and gives up
// on a peer whose pong does not come within timeout. Without it a peer that
// vanished without a close (a dead host, a dropped NAT entry, a stalled
// replica) holds the connection, its goroutines and its subscriptions until
// TCP gives up, which can take hours. The viewer stream, the relay's parts
// connection and the parts endpoint all use it.
type keepalive struct {
	clock    clock.Clock
	interval time.Duration
	timeout  time.Duration
}

func defaultKeepalive(clk clock.Clock) keepalive {
	return keepalive{clock: clk, interval: PingInterval, timeout: WriteTimeout}
}

// run pings conn until ctx ends (nil) or a ping fails (its error). Pongs
// are seen only by a reader, so the connection must have one.
func (k keepalive) run(ctx context.Context, conn *websocket.Conn) error {
	t := k.clock.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			pctx, cancel := context.WithTimeout(ctx, k.timeout)
			err := conn.Ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("websocket peer did not answer a ping within %s: %w", k.timeout, err)
			}
		}
	}
}

// pinger is keepalive for a connection whose owner already runs a loop:
// the loop selects on C and calls ping at each tick, and on result for
// the outcome. A ping runs in a goroutine of its own only while it is out
// (its pong is seen by the connection's reader, and the loop must not
// wait for it), so an idle connection holds no pinging goroutine. A
// pinger is used by one goroutine.
type pinger struct {
	k      keepalive
	ticker clock.Ticker
	out    bool       // a ping is out
	res    chan error // its outcome
}

// pinger starts the ticker; stop ends it.
func (k keepalive) pinger() *pinger {
	return &pinger{k: k, ticker: k.clock.NewTicker(k.interval), res: make(chan error, 1)}
}

// C ticks every interval.
func (p *pinger) C() <-chan time.Time { return p.ticker.C() }

// result delivers the outcome of the ping out: nil, or why the peer is
// given up on.
func (p *pinger) result() <-chan error { return p.res }

// ping sends a ping in a goroutine wg waits for, unless one is out.
func (p *pinger) ping(ctx context.Context, conn *websocket.Conn, wg *sync.WaitGroup) {
	if p.out {
		return
	}
	p.out = true
	wg.Go(func() {
		// Not ended by ctx (sendContext): a live peer's pong comes at
		// once, and the close after the stream ends needs the connection.
		pctx, cancel := sendContext(ctx, p.k.timeout)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("websocket peer did not answer a ping within %s: %w", p.k.timeout, err)
		} else {
			err = nil
		}
		p.res <- err
	})
}

// done records that result was received.
func (p *pinger) done() { p.out = false }

func (p *pinger) stop() { p.ticker.Stop() }
