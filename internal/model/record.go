package model

import "time"

// RecordHead is what every record kind kept on the generic record table
// (store.RecordStore) carries: embed it in the kind's type. Name, when
// set, is unique within the kind and looks the record up beside its UUID;
// Owner is the project that owns it ("" for none).
type RecordHead struct {
	ID        int64     `json:"-"`
	Version   int64     `json:"-"`
	UUID      string    `json:"uuid"`
	Name      string    `json:"name,omitempty"`
	Owner     string    `json:"owner,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Head gives the head, so generic code reaches it through a pointer to
// the kind's type.
func (h *RecordHead) Head() *RecordHead { return h }
