package stream

import (
	"context"
	"fmt"
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
