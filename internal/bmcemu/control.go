package bmcemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// KnobsPatch is the body of PATCH /emulator/machines[/{id}]: fields left out
// are unchanged. Latency is a Go duration ("50ms").
type KnobsPatch struct {
	Latency     *string  `json:"latency,omitempty"`
	FailureRate *float64 `json:"failure_rate,omitempty"`
	// LatencyJitter and SessionTimeout are Go durations; MaxSessions and
	// RateLimit (calls a second) 0 for no limit.
	LatencyJitter  *string  `json:"latency_jitter,omitempty"`
	MaxSessions    *int     `json:"max_sessions,omitempty"`
	SessionTimeout *string  `json:"session_timeout,omitempty"`
	RateLimit      *float64 `json:"rate_limit,omitempty"`
	Dead           *bool    `json:"dead,omitempty"`
	RejectAuth     *bool    `json:"reject_auth,omitempty"`
	// FailInsertMedia makes InsertMedia answer HTTP 500.
	FailInsertMedia *bool `json:"fail_insert_media,omitempty"`
	// PowerState "On" or "Off" switches the machine behind its BMC's back.
	PowerState *string `json:"power_state,omitempty"`
	// Health sets the system's Status.Health: OK, Warning or Critical.
	Health *string `json:"health,omitempty"`
}

// Apply checks p and returns the change it makes to knobs.
func (p KnobsPatch) Apply() (func(*Knobs), error) {
	lat, err := knobDuration("latency", p.Latency)
	if err != nil {
		return nil, err
	}
	jitter, err := knobDuration("latency_jitter", p.LatencyJitter)
	if err != nil {
		return nil, err
	}
	timeout, err := knobDuration("session_timeout", p.SessionTimeout)
	if err != nil {
		return nil, err
	}
	if p.MaxSessions != nil && *p.MaxSessions < 0 {
		return nil, fmt.Errorf("max_sessions %d is negative", *p.MaxSessions)
	}
	if p.RateLimit != nil && *p.RateLimit < 0 {
		return nil, fmt.Errorf("rate_limit %v is negative", *p.RateLimit)
	}
	if p.FailureRate != nil && (*p.FailureRate < 0 || *p.FailureRate > 1) {
		return nil, fmt.Errorf("failure_rate %v is not in [0, 1]", *p.FailureRate)
	}
	if p.PowerState != nil && *p.PowerState != "On" && *p.PowerState != "Off" {
		return nil, fmt.Errorf("power_state %q is not On or Off", *p.PowerState)
	}
	if h := p.Health; h != nil && *h != "OK" && *h != "Warning" && *h != "Critical" {
		return nil, fmt.Errorf("health %q is not OK, Warning or Critical", *h)
	}
	return func(k *Knobs) {
		if p.Latency != nil {
			k.Latency = lat
		}
		if p.FailureRate != nil {
			k.FailureRate = *p.FailureRate
		}
		if p.LatencyJitter != nil {
			k.LatencyJitter = jitter
		}
		if p.SessionTimeout != nil {
			k.SessionTimeout = timeout
		}
		if p.MaxSessions != nil {
			k.MaxSessions = *p.MaxSessions
		}
		if p.RateLimit != nil {
			k.RateLimit = *p.RateLimit
		}
		if p.Dead != nil {
			k.Dead = *p.Dead
		}
		if p.RejectAuth != nil {
			k.RejectAuth = *p.RejectAuth
		}
		if p.FailInsertMedia != nil {
			k.FailInsertMedia = *p.FailInsertMedia
		}
		if p.Health != nil {
			k.Health = *p.Health
		}
	}, nil
}

// knobDuration parses a duration knob ("" when left out).
func knobDuration(name string, v *string) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(*v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q is not a duration such as 50ms", name, *v)
	}
	return d, nil
}

// statusView is Status with a readable latency.
type statusView struct {
	Status
	Knobs knobsView `json:"knobs"`
}

type knobsView struct {
	Latency     string  `json:"latency"`
	FailureRate float64 `json:"failure_rate"`
	Dead        bool    `json:"dead"`
	RejectAuth  bool    `json:"reject_auth"`
	// FailInsertMedia: InsertMedia answers HTTP 500.
	FailInsertMedia bool    `json:"fail_insert_media"`
	Health          string  `json:"health,omitempty"`
	LatencyJitter   string  `json:"latency_jitter,omitempty"`
	MaxSessions     int     `json:"max_sessions,omitempty"`
	SessionTimeout  string  `json:"session_timeout,omitempty"`
	RateLimit       float64 `json:"rate_limit,omitempty"`
}

// durationView shows a duration knob, "" when unset.
func durationView(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func view(s Status) statusView {
	return statusView{Status: s, Knobs: knobsView{Latency: s.Knobs.Latency.String(), FailureRate: s.Knobs.FailureRate,
		Dead: s.Knobs.Dead, RejectAuth: s.Knobs.RejectAuth, FailInsertMedia: s.Knobs.FailInsertMedia, Health: s.Knobs.Health,
		LatencyJitter: durationView(s.Knobs.LatencyJitter), MaxSessions: s.Knobs.MaxSessions,
		SessionTimeout: durationView(s.Knobs.SessionTimeout), RateLimit: s.Knobs.RateLimit}}
}

// controlAPI is the emulator's own endpoint under /emulator/: the
// machines' status and knobs, for tests and operators.
type controlAPI struct{ e *Emulator }

// serveControl is the emulator's own API (no auth; it listens on loopback):
//
//	GET   /emulator/machines          every machine's status
//	GET   /emulator/machines/{id}     one machine
//	PATCH /emulator/machines          knobs of every machine (KnobsPatch)
//	PATCH /emulator/machines/{id}     knobs of one machine
func (c controlAPI) serveControl(w http.ResponseWriter, r *http.Request) {
	e := c.e
	segs := splitPath(r.URL.Path)
	if len(segs) < 2 || len(segs) > 3 || segs[1] != "machines" {
		http.NotFound(w, r)
		return
	}
	var targets []*Machine
	id := ""
	if len(segs) == 3 {
		id = segs[2]
		m := e.byID[id]
		if m == nil {
			http.Error(w, "no machine "+id, http.StatusNotFound)
			return
		}
		targets = []*Machine{m}
	} else {
		targets = e.machines
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPatch:
		var p KnobsPatch
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		change, err := p.Apply()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		e.SetKnobs(id, change)
		if p.PowerState != nil {
			for _, m := range targets {
				if err := m.SetPower(*p.PowerState == "On"); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
			}
		}
	default:
		w.Header().Set("Allow", "GET, PATCH")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	out := make([]statusView, 0, len(targets))
	for _, m := range targets {
		out = append(out, view(m.Status()))
	}
	w.Header().Set("Content-Type", "application/json")
	if id != "" {
		_ = json.NewEncoder(w).Encode(out[0])
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"machines": out})
}
