package api

import "testing"

func TestZZDebug(t *testing.T) {
	e := newEnv(t)
	n := e.createNode(`{"driver":"fake-hardware","name":"dbg","driver_info":{"ipmi_password":"x","ipmi_username":"u"}}`)
	for _, p := range []string{"/v1/nodes/dbg", "/v1/nodes?limit=1", "/v1/nodes/dbg/states", "/", "/v1", "/v1/drivers?detail=True", "/v1/conductors?detail=True", "/v1/nodes/dbg/validate", "/v1/nodes/dbg/history?detail=True"} {
		rec := e.do("GET", p, "", latest)
		t.Logf("%s %d %s", p, rec.Code, rec.Body.String())
	}
	_ = n
	rec := e.do("PUT", "/v1/nodes/dbg/states/provision", `{"target":"manage"}`, latest)
	t.Logf("%d %v", rec.Code, rec.Header())
	rec = e.do("GET", "/v1/nodes/dbg/history?detail=True", "", latest)
	t.Logf("%d %s", rec.Code, rec.Body.String())
}
