package bmcemu

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// The Redfish EventService: one per emulator, as one Redfish service has
// one (what Ironic's redfish vendor passthru create_subscription,
// delete_subscription, get_all_subscriptions and get_subscription use).
// Subscriptions are kept, listed and deleted; no event is ever delivered,
// so a subscription never makes the emulator send traffic anywhere.
const (
	rfEventService  = rfRoot + "/EventService"
	rfSubscriptions = rfEventService + "/Subscriptions"
)

// EventTypes are the event types a subscription may ask for
// (EventTypesForSubscription).
var EventTypes = []string{"StatusChange", "ResourceUpdated", "ResourceAdded", "ResourceRemoved", "Alert"}

// Subscription is one event destination (EventDestination). HTTPHeaders
// are kept but never shown, as Redfish requires (they carry credentials).
type Subscription struct {
	ID          string              `json:"Id"`
	Destination string              `json:"Destination"`
	EventTypes  []string            `json:"EventTypes"`
	Context     string              `json:"Context"`
	Protocol    string              `json:"Protocol"`
	HTTPHeaders []map[string]string `json:"-"`
}

// eventStore holds the subscriptions; its zero value is empty and usable.
type eventStore struct {
	mu     sync.Mutex
	subs   map[string]Subscription
	nextID int
}

// Subscriptions returns the event subscriptions, by id.
func (e *Emulator) Subscriptions() []Subscription {
	s := &e.events
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Subscription, 0, len(s.subs))
	for _, sub := range s.subs {
		out = append(out, sub)
	}
	sort.Slice(out, func(i, j int) bool { return subLess(out[i].ID, out[j].ID) })
	return out
}

func subLess(a, b string) bool {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x < y
}

func subscriptionJSON(s Subscription) map[string]any {
	return map[string]any{
		"@odata.type": "#EventDestination.v1_13_0.EventDestination", "@odata.id": rfSubscriptions + "/" + s.ID,
		"Id": s.ID, "Name": "Event Subscription " + s.ID, "Destination": s.Destination, "EventTypes": s.EventTypes,
		"Context": s.Context, "Protocol": s.Protocol, "SubscriptionType": "RedfishEvent", "HttpHeaders": []any{},
	}
}

// serveEvents answers /redfish/v1/EventService[/Subscriptions[/{id}]].
func (h redfishAPI) serveEvents(w http.ResponseWriter, r *http.Request, sub []string) {
	e := h.e
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#EventService.v1_7_0.EventService", "@odata.id": rfEventService,
			"Id": "EventService", "Name": "Event Service", "ServiceEnabled": true, "Status": enabledOK,
			"DeliveryRetryAttempts": 3, "DeliveryRetryIntervalSeconds": 60,
			"EventTypesForSubscription": EventTypes,
			"Subscriptions":             odataID(rfSubscriptions),
		})
	case len(sub) == 1 && sub[0] == "Subscriptions" && r.Method == http.MethodGet:
		var members []any
		for _, s := range e.Subscriptions() {
			members = append(members, odataID(rfSubscriptions+"/"+s.ID))
		}
		writeJSON(w, http.StatusOK, collection("#EventDestinationCollection.EventDestinationCollection",
			"Event Subscriptions Collection", rfSubscriptions, members))
	case len(sub) == 1 && sub[0] == "Subscriptions" && r.Method == http.MethodPost:
		h.subscribe(w, r)
	case len(sub) == 2 && sub[0] == "Subscriptions" && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
		s := &e.events
		s.mu.Lock()
		found, ok := s.subs[sub[1]]
		if ok && r.Method == http.MethodDelete {
			delete(s.subs, sub[1])
		}
		s.mu.Unlock()
		switch {
		case !ok:
			notFound(w, r)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, subscriptionJSON(found))
		}
	case len(sub) <= 2 && (len(sub) == 0 || sub[0] == "Subscriptions"):
		methodNotAllowed(w)
	default:
		notFound(w, r)
	}
}

// subscribe creates a subscription from a POST body, checked as a BMC
// checks it: an absolute http(s) Destination, Protocol Redfish, known
// EventTypes (default Alert).
func (h redfishAPI) subscribe(w http.ResponseWriter, r *http.Request) {
	e := h.e
	var body struct {
		Destination *string
		EventTypes  []string
		Context     *string
		Protocol    *string
		HttpHeaders []map[string]string //nolint:revive // Redfish's name
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err := json.Unmarshal(raw, &body); err != nil {
		malformedJSON(w)
		return
	}
	bad := func(prop, val string) {
		rfError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList",
			"The value '"+val+"' for the property "+prop+" is not in the list of acceptable values.")
	}
	if body.Destination == nil {
		rfError(w, http.StatusBadRequest, "Base.1.8.PropertyMissing", "The property Destination is a required property and must be included in the request.")
		return
	}
	if u, err := url.Parse(*body.Destination); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		rfError(w, http.StatusBadRequest, "Base.1.8.PropertyValueFormatError",
			"The value '"+*body.Destination+"' for the property Destination is of a different format than the property can accept.")
		return
	}
	s := Subscription{Destination: *body.Destination, EventTypes: body.EventTypes, Protocol: "Redfish", HTTPHeaders: body.HttpHeaders}
	if body.Protocol != nil {
		if *body.Protocol != "Redfish" {
			bad("Protocol", *body.Protocol)
			return
		}
	}
	if body.Context != nil {
		s.Context = *body.Context
	}
	if len(s.EventTypes) == 0 {
		s.EventTypes = []string{"Alert"}
	}
	for _, t := range s.EventTypes {
		if !slices.Contains(EventTypes, t) {
			bad("EventTypes", t)
			return
		}
	}
	es := &e.events
	es.mu.Lock()
	if es.subs == nil {
		es.subs = map[string]Subscription{}
	}
	es.nextID++
	s.ID = strconv.Itoa(es.nextID)
	es.subs[s.ID] = s
	es.mu.Unlock()
	w.Header().Set("Location", rfSubscriptions+"/"+s.ID)
	writeJSON(w, http.StatusCreated, subscriptionJSON(s))
}
