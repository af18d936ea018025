package modelrelay

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/fakemodel"
)

// BenchmarkModelCall measures what the relay adds to one model call: each
// iteration sends the same Messages API request (streamed, the way the
// CLIs ask) to the fake model directly and through a relay, interleaved so
// that the machine's load falls on both alike, over kept-alive
// connections as a CLI's are. It reports the medians and their
// difference: the relay's parse, key swap, second hop and metering.
func BenchmarkModelCall(b *testing.B) {
	fake := fakemodel.Start(b)
	r, addr := start(b, Config{Upstream: fake.URL(), Key: fake.Key(), Wire: agent.WireAnthropic,
		Limits: []agent.Limit{{Name: "the run's budget", MaxTokens: 1 << 60}}})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"alpha"}]}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	send := func(url, key string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		began := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(began)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), "turn 1: alpha") {
			b.Fatalf("%d %s", resp.StatusCode, got)
		}
		return d
	}
	send(fake.URL(), fake.Key())
	send("http://"+addr, r.Placeholder())
	var direct, relayed []time.Duration
	b.ResetTimer()
	for range b.N {
		direct = append(direct, send(fake.URL(), fake.Key()))
		relayed = append(relayed, send("http://"+addr, r.Placeholder()))
	}
	b.StopTimer()
	md, mr := median(direct), median(relayed)
	b.ReportMetric(ms(md), "direct-ms")
	b.ReportMetric(ms(mr), "relayed-ms")
	b.ReportMetric(ms(mr-md), "added-ms")
	if u := r.Usage(); u.Tokens() == 0 {
		b.Fatal("the relay metered nothing")
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
