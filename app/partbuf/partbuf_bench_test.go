package partbuf

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/app/sdk"
)

// BenchmarkAddPartFanout measures adding a typical streamed text delta with
// n subscribers reading the episode. ns/op covers AddPart and the delivery of
// the part to every subscriber (the timer stops once all of them have
// received every part); add-ns/op is the AddPart calls alone. The baseline
// appends the same part to a slice under a mutex.
func BenchmarkAddPartFanout(b *testing.B) {
	part := sdk.ChatMessagePart{Type: sdk.PartText, Text: "The quick brown fox jumps "}

	b.Run("baseline=mutex-slice", func(b *testing.B) {
		var mu sync.Mutex
		var parts []sdk.ChatMessagePart
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			parts = append(parts, part)
			mu.Unlock()
		}
		// Read the slice, as the buffer's readers do, so the appends count.
		if len(parts) == 0 {
			b.Fatal("nothing appended")
		}
	})

	for _, n := range []int{0, 1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			buf := New(Config{MaxBytes: math.MaxInt})
			defer buf.Stop()
			ep := newKey()
			if err := buf.CreateEpisode(ep); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for range n {
				ch, cancel := buf.SubscribeToEpisode(b.Context(), ep)
				defer cancel()
				wg.Go(func() {
					for range ch {
					}
				})
			}

			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := buf.AddPart(ep, part); err != nil {
					b.Fatal(err)
				}
			}
			added := time.Since(start)
			buf.CloseEpisode(ep)
			wg.Wait()
			b.StopTimer()

			b.ReportMetric(float64(added.Nanoseconds())/float64(b.N), "add-ns/op")
			if n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			}
		})
	}
}

// BenchmarkAddPartPaced measures the generating goroutine's cost of one
// AddPart when its subscribers keep up: each part is added once every
// subscriber received the previous one, so all of them wait for it, as
// the viewers of a paced provider stream do. add-ns/op should not grow
// with the subscribers: fan-out is not the producer's work.
func BenchmarkAddPartPaced(b *testing.B) {
	part := sdk.ChatMessagePart{Type: sdk.PartText, Text: "The quick brown fox jumps "}
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			buf := New(Config{MaxBytes: math.MaxInt})
			defer buf.Stop()
			ep := newKey()
			if err := buf.CreateEpisode(ep); err != nil {
				b.Fatal(err)
			}
			var got, done sync.WaitGroup
			for range n {
				ch, cancel := buf.SubscribeToEpisode(b.Context(), ep)
				defer cancel()
				done.Go(func() {
					for range ch {
						got.Done()
					}
				})
			}
			var added time.Duration
			for b.Loop() {
				got.Add(n)
				t0 := time.Now()
				if err := buf.AddPart(ep, part); err != nil {
					b.Fatal(err)
				}
				added += time.Since(t0)
				got.Wait()
			}
			buf.CloseEpisode(ep)
			done.Wait()
			b.ReportMetric(float64(added.Nanoseconds())/float64(b.N), "add-ns/op")
		})
	}
}
