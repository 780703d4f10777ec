package bmcemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
)

// Handler serves the Redfish tree of every machine under /redfish/v1 and the
// control endpoint under /emulator/. Tests may mount it on an httptest server.
func (e *Emulator) Handler() http.Handler {
	mux := http.NewServeMux()
	rf := redfishAPI{e}
	mux.HandleFunc("/redfish", rf.serveRedfish)
	mux.HandleFunc("/redfish/", rf.serveRedfish)
	mux.HandleFunc("/emulator/", controlAPI{e}.serveControl)
	return mux
}

const (
	rfRoot     = "/redfish/v1"
	rfSystems  = rfRoot + "/Systems"
	rfSessions = rfRoot + "/SessionService/Sessions"
)

// redfishAPI is the Redfish service every machine's BMC answers: the
// tree under /redfish/v1 (systems, managers and their virtual media,
// sessions, BIOS, storage, the update, task and event services), with each
// BMC's knobs and limits applied to every call.
type redfishAPI struct{ e *Emulator }

// creds are the credentials a request carries.
type creds struct{ user, password string }

func (h redfishAPI) serveRedfish(w http.ResponseWriter, r *http.Request) {
	e := h.e
	segs := splitPath(r.URL.Path)
	var m *Machine
	if len(segs) >= 4 && segs[0] == "redfish" && segs[1] == "v1" && (segs[2] == "Systems" || segs[2] == "Managers") {
		if m = e.byID[segs[3]]; m == nil {
			if h.misbehave(w, r, h.endpointKnobs(r)) {
				notFound(w, r)
			}
			return
		}
	}
	if pm := portMachine(r); pm != nil {
		if m != nil && m != pm {
			notFound(w, r)
			return
		}
		m = pm // a machine's own BMC: its knobs and credentials apply to every call
	}
	k := e.defaultKnobs()
	if m != nil {
		k = m.call()
	}
	if !h.misbehave(w, r, k) {
		return
	}
	if len(segs) < 2 {
		writeJSON(w, http.StatusOK, map[string]any{"v1": rfRoot + "/"})
		return
	}
	rest := segs[2:]
	if len(rest) == 0 || rest[0] == "odata" || rest[0] == "$metadata" {
		h.serveRoot(w, r)
		return
	}
	if len(rest) == 2 && rest[0] == "SessionService" && rest[1] == "Sessions" && r.Method == http.MethodPost {
		h.createSession(w, r, k)
		return
	}
	c, ok := h.credentials(r, k)
	if !ok || !h.authorized(c, m) {
		w.Header().Set("WWW-Authenticate", `Basic realm="Anvil BMC emulator"`)
		rfError(w, http.StatusUnauthorized, "Base.1.8.InsufficientPrivilege",
			"There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.")
		return
	}
	switch {
	case rest[0] == "SessionService":
		h.serveSessions(w, r, k, rest[1:])
	case rest[0] == "EventService":
		h.serveEvents(w, r, rest[1:])
	case rest[0] == "Systems" && len(rest) == 1:
		h.serveSystems(w, r, c)
	case rest[0] == "Systems":
		h.serveSystem(w, r, m, rest[2:])
	case rest[0] == "Managers" && len(rest) == 1:
		h.serveManagers(w, r, c, nil, nil)
	case rest[0] == "Managers":
		h.serveManagers(w, r, c, m, rest[2:])
	case rest[0] == "UpdateService":
		h.serveUpdateService(w, r, c, rest[1:])
	case rest[0] == "TaskService" && len(rest) >= 2 && (rest[1] == "Tasks" || rest[1] == "TaskMonitors"):
		h.serveTasks(w, r, rest[1] == "TaskMonitors", rest[2:])
	case rest[0] == "Registries":
		h.serveRegistries(w, r, rest[1:])
	default:
		notFound(w, r)
	}
}

// endpointKnobs are the knobs of the BMC r reached when it names no machine.
func (h redfishAPI) endpointKnobs(r *http.Request) Knobs {
	e := h.e
	if pm := portMachine(r); pm != nil {
		return pm.Knobs()
	}
	return e.defaultKnobs()
}

// misbehave applies knobs; it reports false when it answered the call.
func (h redfishAPI) misbehave(w http.ResponseWriter, r *http.Request, k Knobs) bool {
	e := h.e
	if k.Dead {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return false
			}
		}
		panic(http.ErrAbortHandler)
	}
	ep := h.endpointFor(r)
	if ok, wait := ep.admit(k); !ok {
		unavailable(w, wait) // over the rate limit: answered at once
		return false
	}
	if err := clock.Sleep(r.Context(), e.latency(k)); err != nil {
		return false
	}
	if e.fails(k.FailureRate) {
		ep.countTransient()
		unavailable(w, time.Second)
		return false
	}
	return true
}

func (h redfishAPI) credentials(r *http.Request, k Knobs) (creds, bool) {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		return h.endpointFor(r).get(tok, k)
	}
	u, p, ok := r.BasicAuth()
	return creds{u, p}, ok
}

// authorized: a machine's resources need its credentials; the rest need the
// credentials of at least one machine.
func (h redfishAPI) authorized(c creds, m *Machine) bool {
	e := h.e
	if m != nil {
		return m.checkAuth(c.user, c.password)
	}
	for _, x := range e.machines {
		if x.checkAuth(c.user, c.password) {
			return true
		}
	}
	return false
}

func (h redfishAPI) serveRoot(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"@odata.type":    "#ServiceRoot.v1_15_0.ServiceRoot",
		"@odata.id":      rfRoot + "/",
		"Id":             "RootService",
		"Name":           "Anvil BMC emulator",
		"RedfishVersion": "1.15.0",
		"UUID":           "a0e0a0e0-0000-4000-8000-000000000001",
		"Product":        "Anvil BMC emulator",
		"Vendor":         "Anvil",
		"Systems":        odataID(rfSystems),
		"Managers":       odataID(rfManagers),
		"SessionService": odataID(rfRoot + "/SessionService"),
		"UpdateService":  odataID(rfUpdate),
		"Registries":     odataID(rfRoot + "/Registries"),
		"EventService":   odataID(rfEventService),
		"Links":          map[string]any{"Sessions": odataID(rfSessions)},
	})
}

func (h redfishAPI) serveSystems(w http.ResponseWriter, r *http.Request, c creds) {
	e := h.e
	if r.Method != http.MethodGet {
		methodNotAllowed(w)
		return
	}
	var members []any
	pm := portMachine(r)
	for _, m := range e.machines {
		if (pm == nil || m == pm) && m.checkAuth(c.user, c.password) {
			members = append(members, odataID(rfSystems+"/"+m.ID))
		}
	}
	writeJSON(w, http.StatusOK, collection("#ComputerSystemCollection.ComputerSystemCollection",
		"Computer System Collection", rfSystems, members))
}

func (h redfishAPI) serveSystem(w http.ResponseWriter, r *http.Request, m *Machine, sub []string) {
	base := rfSystems + "/" + m.ID
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, systemJSON(m))
	case len(sub) == 0 && r.Method == http.MethodPatch:
		h.patchSystem(w, r, m)
	case len(sub) == 2 && sub[0] == "Actions" && sub[1] == "ComputerSystem.Reset":
		if r.Method != http.MethodPost {
			methodNotAllowed(w)
			return
		}
		h.reset(w, r, m)
	case len(sub) > 0 && sub[0] == "VirtualMedia":
		h.serveVirtualMedia(w, r, m, base+"/VirtualMedia", sub[1:])
	case len(sub) > 0 && sub[0] == "Bios":
		h.serveBIOS(w, r, m, base+"/Bios", sub[1:])
	case len(sub) > 0 && sub[0] == "Storage":
		h.serveStorage(w, r, m, base+"/Storage", sub[1:])
	case r.Method != http.MethodGet:
		methodNotAllowed(w)
	default:
		body, ok := inventoryJSON(m, base, sub)
		if !ok {
			notFound(w, r)
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

func (h redfishAPI) patchSystem(w http.ResponseWriter, r *http.Request, m *Machine) {
	var body struct {
		Boot *struct {
			BootSourceOverrideTarget  string
			BootSourceOverrideEnabled string
			BootSourceOverrideMode    string
			HttpBootUri               *string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		malformedJSON(w)
		return
	}
	if body.Boot != nil {
		b := body.Boot
		if err := checkHTTPBootURI(b.HttpBootUri); err != nil {
			rfError(w, http.StatusBadRequest, "Base.1.8.PropertyValueFormatError", err.Error())
			return
		}
		if err := m.setBoot(b.BootSourceOverrideTarget, b.BootSourceOverrideEnabled, b.BootSourceOverrideMode); err != nil {
			rfError(w, http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", err.Error())
			return
		}
		m.setHTTPBootURI(b.HttpBootUri)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h redfishAPI) reset(w http.ResponseWriter, r *http.Request, m *Machine) {
	var body struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		malformedJSON(w)
		return
	}
	on := m.PoweredOn()
	var err error
	switch body.ResetType {
	case "On", "ForceOn":
		err = m.applyPower(true, false)
	case "ForceOff":
		err = m.applyPower(false, false)
	case "GracefulShutdown":
		err = m.shutdown()
	case "ForceRestart", "GracefulRestart", "PowerCycle":
		err = m.applyPower(true, on)
	case "PushPowerButton":
		err = m.applyPower(!on, false)
	case "Nmi":
		m.nmi()
	default:
		rfError(w, http.StatusBadRequest, "Base.1.8.ActionParameterValueNotInList",
			fmt.Sprintf("The value '%s' for the parameter ResetType is not in the list of acceptable values.", body.ResetType))
		return
	}
	if err != nil {
		rfError(w, http.StatusInternalServerError, "Base.1.8.InternalError", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h redfishAPI) createSession(w http.ResponseWriter, r *http.Request, k Knobs) {
	var body struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		malformedJSON(w)
		return
	}
	c := creds{body.UserName, body.Password}
	if !h.authorized(c, portMachine(r)) {
		rfError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "There is no valid session established with the implementation.")
		return
	}
	id, tok, err := h.endpointFor(r).add(c, k)
	if err != nil {
		tooManySessions(w)
		return
	}
	loc := rfSessions + "/" + id
	w.Header().Set("X-Auth-Token", tok)
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, sessionJSON(id, c.user))
}

func (h redfishAPI) serveSessions(w http.ResponseWriter, r *http.Request, k Knobs, sub []string) {
	ep := h.endpointFor(r)
	switch {
	case len(sub) == 0 && r.Method == http.MethodGet:
		timeout := 1800
		if k.SessionTimeout > 0 {
			timeout = int(k.SessionTimeout.Seconds())
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"@odata.type": "#SessionService.v1_1_8.SessionService", "@odata.id": rfRoot + "/SessionService",
			"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true, "SessionTimeout": timeout,
			"Sessions": odataID(rfSessions),
		})
	case len(sub) == 1 && sub[0] == "Sessions" && r.Method == http.MethodGet:
		var members []any
		for _, id := range ep.list(k) {
			members = append(members, odataID(rfSessions+"/"+id))
		}
		writeJSON(w, http.StatusOK, collection("#SessionCollection.SessionCollection", "Session Collection", rfSessions, members))
	case len(sub) == 2 && sub[0] == "Sessions" && r.Method == http.MethodDelete:
		if !ep.remove(sub[1]) {
			rfError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The session was not found.")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		notFound(w, r)
	}
}

func sessionJSON(id, user string) map[string]any {
	return map[string]any{"@odata.type": "#Session.v1_3_0.Session", "@odata.id": rfSessions + "/" + id,
		"Id": id, "Name": "User Session", "UserName": user}
}

func odataID(p string) map[string]any { return map[string]any{"@odata.id": p} }

func collection(typ, name, id string, members []any) map[string]any {
	if members == nil {
		members = []any{}
	}
	return map[string]any{"@odata.type": typ, "@odata.id": id, "Name": name,
		"Members@odata.count": len(members), "Members": members}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// rfError writes a Redfish error body.
func rfError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": code, "Message": msg, "Severity": "Critical"}},
	}})
}

func methodNotAllowed(w http.ResponseWriter) {
	rfError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", "The HTTP method is not allowed on this resource.")
}

// notFound answers a URI that names no resource.
func notFound(w http.ResponseWriter, r *http.Request) {
	rfError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "The resource at the URI "+r.URL.Path+" was not found.")
}

// malformedJSON answers a request body that is not JSON.
func malformedJSON(w http.ResponseWriter) {
	rfError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", "The request body submitted was malformed JSON.")
}
